//! The protobuf messages an etcd member's WAL holds, with the field
//! numbers of etcd's `server/storage/wal/walpb/record.proto`,
//! go.etcd.io/raft's `raftpb/raft.proto` and etcd's
//! `api/etcdserverpb/raft_internal.proto`, `rpc.proto` and
//! `etcdserver.proto` (checked against etcd's main branch and v3.5.33,
//! go.etcd.io/raft's main): only the fields a history needs. Bytes where
//! etcd says string: Go's decoders do not all check UTF-8, so a field
//! `prost` would reject as a string must not make a request undecodable.

/// `walpb.Record`: one framed record.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Record {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(uint32, tag = "2")]
    pub crc: u32,
    #[prost(bytes = "vec", tag = "3")]
    pub data: Vec<u8>,
}

/// `walpb.Snapshot`: the raft snapshot the log continues from.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Snapshot {
    #[prost(uint64, tag = "1")]
    pub index: u64,
    #[prost(uint64, tag = "2")]
    pub term: u64,
}

/// `raftpb.Entry`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Entry {
    /// 0 normal, 1 ConfChange, 2 ConfChangeV2.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(uint64, tag = "2")]
    pub term: u64,
    #[prost(uint64, tag = "3")]
    pub index: u64,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}

/// `etcdserverpb.Metadata` (`etcdserver.proto`): a metadata record's data,
/// the same in every segment.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Metadata {
    #[prost(uint64, tag = "1")]
    pub node_id: u64,
    #[prost(uint64, tag = "2")]
    pub cluster_id: u64,
}

/// `raftpb.HardState`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HardState {
    #[prost(uint64, tag = "1")]
    pub term: u64,
    #[prost(uint64, tag = "2")]
    pub vote: u64,
    #[prost(uint64, tag = "3")]
    pub commit: u64,
}

/// `etcdserverpb.InternalRaftRequest`: the requests that change the v3 key
/// space, and which field any other request came in.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternalRaftRequest {
    #[prost(message, optional, tag = "100")]
    pub header: Option<RequestHeader>,
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// A v2 store request (releases before 3.6).
    #[prost(message, optional, tag = "2")]
    pub v2: Option<V2Request>,
    #[prost(message, optional, tag = "3")]
    pub range: Option<RangeRequest>,
    #[prost(message, optional, tag = "4")]
    pub put: Option<PutRequest>,
    #[prost(message, optional, tag = "5")]
    pub delete_range: Option<DeleteRangeRequest>,
    #[prost(message, optional, tag = "6")]
    pub txn: Option<TxnRequest>,
    #[prost(message, optional, tag = "7")]
    pub compaction: Option<CompactionRequest>,
    #[prost(message, optional, tag = "8")]
    pub lease_grant: Option<LeaseGrantRequest>,
    #[prost(message, optional, tag = "9")]
    pub lease_revoke: Option<LeaseRevokeRequest>,
    #[prost(message, optional, tag = "10")]
    pub alarm: Option<AlarmRequest>,
    #[prost(message, optional, tag = "11")]
    pub lease_checkpoint: Option<LeaseCheckpointRequest>,
}

/// `etcdserverpb.Request`: a v2 store request, alone in an entry (3.4 and
/// before publish members' attributes so) or inside `InternalRaftRequest`
/// field 2 (3.5). Strings as bytes: gogoproto's proto2 strings are not
/// checked for UTF-8.
#[derive(Clone, PartialEq, prost::Message)]
pub struct V2Request {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(bytes = "vec", tag = "2")]
    pub method: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    pub path: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub val: Vec<u8>,
    #[prost(bool, tag = "5")]
    pub dir: bool,
    #[prost(bytes = "vec", tag = "6")]
    pub prev_value: Vec<u8>,
    #[prost(uint64, tag = "7")]
    pub prev_index: u64,
    #[prost(bool, optional, tag = "8")]
    pub prev_exist: Option<bool>,
    #[prost(int64, tag = "9")]
    pub expiration: i64,
    #[prost(bool, tag = "10")]
    pub wait: bool,
    #[prost(uint64, tag = "11")]
    pub since: u64,
    #[prost(bool, tag = "12")]
    pub recursive: bool,
    #[prost(bool, tag = "13")]
    pub sorted: bool,
    #[prost(bool, tag = "14")]
    pub quorum: bool,
    #[prost(int64, tag = "15")]
    pub time: i64,
    #[prost(bool, tag = "16")]
    pub stream: bool,
    #[prost(bool, optional, tag = "17")]
    pub refresh: Option<bool>,
}

/// `etcdserverpb.AlarmRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AlarmRequest {
    #[prost(int32, tag = "1")]
    pub action: i32,
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    #[prost(int32, tag = "3")]
    pub alarm: i32,
}

/// `etcdserverpb.LeaseCheckpointRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseCheckpointRequest {
    #[prost(message, repeated, tag = "1")]
    pub checkpoints: Vec<LeaseCheckpoint>,
}

/// `etcdserverpb.LeaseCheckpoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseCheckpoint {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "2")]
    pub remaining_ttl: i64,
}

/// `etcdserverpb.RequestHeader`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestHeader {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(bytes = "vec", tag = "2")]
    pub username: Vec<u8>,
}

/// `etcdserverpb.PutRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub lease: i64,
    #[prost(bool, tag = "5")]
    pub ignore_value: bool,
    #[prost(bool, tag = "6")]
    pub ignore_lease: bool,
}

/// `etcdserverpb.DeleteRangeRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
}

/// `etcdserverpb.RangeRequest`: only its key range.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
}

/// `etcdserverpb.TxnRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

/// `etcdserverpb.Compare`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Compare {
    /// 0 equal, 1 greater, 2 less, 3 not equal.
    #[prost(int32, tag = "1")]
    pub result: i32,
    /// 0 version, 1 create, 2 mod, 3 value, 4 lease.
    #[prost(int32, tag = "2")]
    pub target: i32,
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    #[prost(oneof = "CompareTarget", tags = "4, 5, 6, 7, 8")]
    pub target_union: Option<CompareTarget>,
    #[prost(bytes = "vec", tag = "64")]
    pub range_end: Vec<u8>,
}

/// `Compare.target_union`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum CompareTarget {
    #[prost(int64, tag = "4")]
    Version(i64),
    #[prost(int64, tag = "5")]
    CreateRevision(i64),
    #[prost(int64, tag = "6")]
    ModRevision(i64),
    #[prost(bytes, tag = "7")]
    Value(Vec<u8>),
    #[prost(int64, tag = "8")]
    Lease(i64),
}

/// `etcdserverpb.RequestOp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestOp {
    #[prost(oneof = "Op", tags = "1, 2, 3, 4")]
    pub request: Option<Op>,
}

/// `RequestOp.request`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Op {
    #[prost(message, tag = "1")]
    Range(RangeRequest),
    #[prost(message, tag = "2")]
    Put(PutRequest),
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeRequest),
    #[prost(message, tag = "4")]
    Txn(TxnRequest),
}

/// `etcdserverpb.CompactionRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactionRequest {
    #[prost(int64, tag = "1")]
    pub revision: i64,
    #[prost(bool, tag = "2")]
    pub physical: bool,
}

/// `etcdserverpb.LeaseGrantRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseGrantRequest {
    #[prost(int64, tag = "1")]
    pub ttl: i64,
    #[prost(int64, tag = "2")]
    pub id: i64,
}

/// `etcdserverpb.LeaseRevokeRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseRevokeRequest {
    #[prost(int64, tag = "1")]
    pub id: i64,
}
