//! The local providers' ciphers (reference §2.4), over RustCrypto: aescbc,
//! aesgcm (also KMS payloads) and secretbox. Each takes the bytes after
//! the `k8s:enc:<provider>:v1:<key name>:` prefix.

use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, KeyIvInit};
use crypto_secretbox::XSalsa20Poly1305;
use hkdf::Hkdf;
use sha2::Sha256;

/// Why a ciphertext did not decrypt with a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CipherError {
    #[error("ciphertext too short ({0} bytes)")]
    TooShort(usize),
    #[error("authentication failed")]
    Authentication,
    #[error("bad padding")]
    Padding,
    #[error("key is {0} bytes")]
    KeySize(usize),
}

/// AES block size, also the CBC IV size.
const BLOCK: usize = 16;
/// GCM nonce size as the apiserver writes it.
const GCM_NONCE: usize = 12;
/// GCM and Poly1305 tag size.
const TAG: usize = 16;
/// XSalsa20 nonce size.
const SECRETBOX_NONCE: usize = 24;

type Aes192Gcm = AesGcm<aes::Aes192, U12>;

/// aescbc: IV(16) ‖ CBC ciphertext, PKCS#7 padded, no MAC.
pub fn aescbc(key: &[u8], data: &[u8]) -> Result<Vec<u8>, CipherError> {
    if !matches!(key.len(), 16 | 24 | 32) {
        return Err(CipherError::KeySize(key.len()));
    }
    if data.len() < 2 * BLOCK {
        return Err(CipherError::TooShort(data.len()));
    }
    let (iv, ciphertext) = data.split_at(BLOCK);
    if !ciphertext.len().is_multiple_of(BLOCK) {
        // Not whole blocks: no padding can end it.
        return Err(CipherError::Padding);
    }
    let mut buf = ciphertext.to_vec();
    let len = match key.len() {
        16 => cbc_decrypt::<aes::Aes128>(key, iv, &mut buf)?,
        24 => cbc_decrypt::<aes::Aes192>(key, iv, &mut buf)?,
        _ => cbc_decrypt::<aes::Aes256>(key, iv, &mut buf)?,
    };
    buf.truncate(len);
    Ok(buf)
}

/// Decrypts `buf` in place and checks every PKCS#7 pad byte; the length
/// of the plaintext left at its start.
fn cbc_decrypt<C>(key: &[u8], iv: &[u8], buf: &mut [u8]) -> Result<usize, CipherError>
where
    C: cbc::cipher::BlockDecryptMut
        + cbc::cipher::BlockCipher
        + cbc::cipher::KeyInit
        + cbc::cipher::BlockSizeUser<BlockSize = cbc::cipher::consts::U16>,
{
    let decryptor =
        cbc::Decryptor::<C>::new_from_slices(key, iv).map_err(|_| CipherError::KeySize(key.len()))?;
    decryptor
        .decrypt_padded_mut::<Pkcs7>(buf)
        .map(<[u8]>::len)
        .map_err(|_| CipherError::Padding)
}

/// aesgcm: nonce(12) ‖ ciphertext ‖ tag(16), authenticated with `aad`.
pub fn aesgcm(key: &[u8], data: &[u8], aad: &[u8]) -> Result<Vec<u8>, CipherError> {
    if !matches!(key.len(), 16 | 24 | 32) {
        return Err(CipherError::KeySize(key.len()));
    }
    if data.len() < GCM_NONCE + TAG {
        return Err(CipherError::TooShort(data.len()));
    }
    let (nonce, sealed) = data.split_at(GCM_NONCE);
    let nonce = aes_gcm::Nonce::<U12>::from_slice(nonce);
    let payload = Payload { msg: sealed, aad };
    let opened = match key.len() {
        16 => gcm::<Aes128Gcm>(key)?.decrypt(nonce, payload),
        24 => gcm::<Aes192Gcm>(key)?.decrypt(nonce, payload),
        _ => gcm::<Aes256Gcm>(key)?.decrypt(nonce, payload),
    };
    opened.map_err(|_| CipherError::Authentication)
}

fn gcm<A: KeyInit>(key: &[u8]) -> Result<A, CipherError> {
    A::new_from_slice(key).map_err(|_| CipherError::KeySize(key.len()))
}

/// secretbox: nonce(24) ‖ tag(16) ‖ ciphertext (XSalsa20-Poly1305).
pub fn secretbox(key: &[u8], data: &[u8]) -> Result<Vec<u8>, CipherError> {
    if key.len() != 32 {
        return Err(CipherError::KeySize(key.len()));
    }
    if data.len() < SECRETBOX_NONCE + TAG {
        return Err(CipherError::TooShort(data.len()));
    }
    let (nonce, sealed) = data.split_at(SECRETBOX_NONCE);
    // crypto_secretbox, like Go's nacl/secretbox, puts the tag first.
    XSalsa20Poly1305::new_from_slice(key)
        .map_err(|_| CipherError::KeySize(key.len()))?
        .decrypt(crypto_secretbox::Nonce::from_slice(nonce), sealed)
        .map_err(|_| CipherError::Authentication)
}

/// The KMS v2 seed form's key: the first 32 bytes of HKDF-Expand(SHA-256,
/// PRK = `seed`, `info`).
pub fn hkdf_key(seed: &[u8], info: &[u8]) -> Result<[u8; 32], CipherError> {
    let hkdf = Hkdf::<Sha256>::from_prk(seed).map_err(|_| CipherError::KeySize(seed.len()))?;
    let mut key = [0u8; 32];
    hkdf.expand(info, &mut key)
        .map_err(|_| CipherError::KeySize(seed.len()))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex::unhex;
    use aes_gcm::aead::AeadCore;
    use cbc::cipher::BlockEncryptMut;

    const GCM_KEY: &[u8] = b"snorlax_awesomes";
    const GCM_PAYLOAD: &str =
        "9f27c8fcea8a58c467d8e437dbf2d85955f9b4bd912f4ef967d788a0cb07797dac0a3f0a0845605ca85ac8562b4ae1";
    const SEED: &str = "5d40323a820ff95561675e3b95e81867c5fdd561d35a88a2d08b08aa9d4fcf5c";
    const SEED_PAYLOAD: &str = "2442759e33945fbad709db577a0f037fd8a709fc76979b8942209debcecb9d57efe3d6ff6a1ef6ee9a5003b9833b3043cec1e47b35175b151107a8d2416b0e296bbf66b5d102fcefdf9a78f293d271";
    const SEED_KEY: &str = "6e58b7659c304b0c382f42f16bd700465def1dead80bf6f1bf1d52073bdb0c00";

    fn h(text: &str) -> Vec<u8> {
        unhex(text).expect("test hex")
    }

    #[test]
    fn aesgcm_opens_kubernetes_vector() {
        let data = h(GCM_PAYLOAD);
        assert_eq!(aesgcm(GCM_KEY, &data, b"bamboo").unwrap(), b"pandas are the best");
    }

    #[test]
    fn aesgcm_refuses_wrong_aad_tampering_and_short_input() {
        let data = h(GCM_PAYLOAD);
        assert_eq!(
            aesgcm(GCM_KEY, &data, b"bambo0"),
            Err(CipherError::Authentication)
        );
        assert_eq!(aesgcm(GCM_KEY, &data, b""), Err(CipherError::Authentication));
        for i in [0, GCM_NONCE, data.len() - 1] {
            let mut bad = data.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                aesgcm(GCM_KEY, &bad, b"bamboo"),
                Err(CipherError::Authentication),
                "flipped byte {i}"
            );
        }
        assert_eq!(
            aesgcm(b"snorlax_awesomeS", &data, b"bamboo"),
            Err(CipherError::Authentication)
        );
        assert_eq!(
            aesgcm(GCM_KEY, &data[..27], b"bamboo"),
            Err(CipherError::TooShort(27))
        );
        assert_eq!(
            aesgcm(&GCM_KEY[..15], &data, b"bamboo"),
            Err(CipherError::KeySize(15))
        );
    }

    #[test]
    fn aesgcm_round_trips_every_key_size() {
        for size in [16, 24, 32] {
            let key = vec![0x42u8; size];
            let nonce = [7u8; GCM_NONCE];
            let payload = Payload {
                msg: b"some secret".as_slice(),
                aad: b"/registry/secrets/default/x".as_slice(),
            };
            let n = aes_gcm::Nonce::<U12>::from_slice(&nonce);
            let sealed = match size {
                16 => Aes128Gcm::new_from_slice(&key).unwrap().encrypt(n, payload),
                24 => Aes192Gcm::new_from_slice(&key).unwrap().encrypt(n, payload),
                _ => Aes256Gcm::new_from_slice(&key).unwrap().encrypt(n, payload),
            }
            .unwrap();
            let data = [nonce.as_slice(), &sealed].concat();
            assert_eq!(
                aesgcm(&key, &data, b"/registry/secrets/default/x").unwrap(),
                b"some secret",
                "AES-{}",
                size * 8
            );
        }
    }

    #[test]
    fn hkdf_seed_form_opens_kubernetes_vector() {
        let seed = h(SEED);
        let payload = h(SEED_PAYLOAD);
        let key = hkdf_key(&seed, &payload[..32]).unwrap();
        assert_eq!(key.to_vec(), h(SEED_KEY));
        assert_eq!(
            aesgcm(&key, &payload[32..], b"bamboo").unwrap(),
            b"pandas are the best"
        );
        assert_eq!(hkdf_key(&seed[..16], b"x"), Err(CipherError::KeySize(16)));
    }

    /// IV ‖ AES-CBC-PKCS#7 ciphertext, as the apiserver writes it.
    fn cbc_seal(key: &[u8], iv: &[u8; BLOCK], plaintext: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; (plaintext.len() / BLOCK + 1) * BLOCK];
        buf[..plaintext.len()].copy_from_slice(plaintext);
        let len = plaintext.len();
        let ct = match key.len() {
            16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_mut::<Pkcs7>(&mut buf, len)
                .unwrap()
                .to_vec(),
            24 => cbc::Encryptor::<aes::Aes192>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_mut::<Pkcs7>(&mut buf, len)
                .unwrap()
                .to_vec(),
            _ => cbc::Encryptor::<aes::Aes256>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_mut::<Pkcs7>(&mut buf, len)
                .unwrap()
                .to_vec(),
        };
        [iv.as_slice(), &ct].concat()
    }

    #[test]
    fn aescbc_round_trips_every_key_size_and_length() {
        let iv = [0x11u8; BLOCK];
        for size in [16, 24, 32] {
            let key: Vec<u8> = (0..size as u8).collect();
            // 0, 15, 16 and 17 bytes: a full pad block, 1, 16 and 15 pad bytes.
            for len in [0, 15, 16, 17, 40] {
                let plaintext = vec![b'p'; len];
                let data = cbc_seal(&key, &iv, &plaintext);
                assert_eq!(aescbc(&key, &data).unwrap(), plaintext, "{size} {len}");
            }
        }
    }

    #[test]
    fn aescbc_refuses_bad_padding_lengths_and_keys() {
        let key = [0x24u8; 32];
        let iv = [0x5au8; BLOCK];
        // 19 bytes: two blocks, the second ending in 13 bytes of 0x0d.
        let data = cbc_seal(&key, &iv, b"pandas are the best");
        assert_eq!(data.len(), 48);

        // A byte of the previous block flips the same plaintext byte.
        let mut zero_pad = data.clone();
        zero_pad[31] ^= 0x0d; // last pad byte becomes 0
        assert_eq!(aescbc(&key, &zero_pad), Err(CipherError::Padding));
        let mut long_pad = data.clone();
        long_pad[31] ^= 0x0d ^ 0x11; // last pad byte becomes 17
        assert_eq!(aescbc(&key, &long_pad), Err(CipherError::Padding));
        let mut inner_pad = data.clone();
        inner_pad[30] ^= 0x01; // one pad byte that is not the last
        assert_eq!(aescbc(&key, &inner_pad), Err(CipherError::Padding));

        // The last block garbled: checked for this key, IV and plaintext.
        let mut garbled = data.clone();
        garbled[47] ^= 0x80;
        assert_eq!(aescbc(&key, &garbled), Err(CipherError::Padding));

        assert_eq!(aescbc(&key, &data[..16]), Err(CipherError::TooShort(16)));
        assert_eq!(aescbc(&key, &data[..31]), Err(CipherError::TooShort(31)));
        assert_eq!(aescbc(&key, &data[..40]), Err(CipherError::Padding));
        assert_eq!(aescbc(&key[..20], &data), Err(CipherError::KeySize(20)));
    }

    #[test]
    fn secretbox_round_trips_and_refuses_wrong_key() {
        let key = [0x33u8; 32];
        let nonce = XSalsa20Poly1305::generate_nonce(&mut aes_gcm::aead::OsRng);
        let sealed = XSalsa20Poly1305::new_from_slice(&key)
            .unwrap()
            .encrypt(&nonce, b"pandas are the best".as_slice())
            .unwrap();
        let data = [nonce.as_slice(), &sealed].concat();
        assert_eq!(secretbox(&key, &data).unwrap(), b"pandas are the best");

        let mut other = key;
        other[0] ^= 1;
        assert_eq!(secretbox(&other, &data), Err(CipherError::Authentication));
        let mut tampered = data.clone();
        tampered[SECRETBOX_NONCE] ^= 1; // in the tag
        assert_eq!(secretbox(&key, &tampered), Err(CipherError::Authentication));
        assert_eq!(secretbox(&key, &data[..39]), Err(CipherError::TooShort(39)));
        assert_eq!(secretbox(&key[..16], &data), Err(CipherError::KeySize(16)));
    }

    #[test]
    fn secretbox_layout_is_tag_then_ciphertext() {
        // Seal detached, lay out as Go's secretbox.Seal does: nonce ‖ tag ‖ ct.
        use aes_gcm::aead::AeadInPlace;
        let key = [0x77u8; 32];
        let nonce = [0x01u8; SECRETBOX_NONCE];
        let mut ct = b"hello".to_vec();
        let tag = XSalsa20Poly1305::new_from_slice(&key)
            .unwrap()
            .encrypt_in_place_detached(crypto_secretbox::Nonce::from_slice(&nonce), b"", &mut ct)
            .unwrap();
        let data = [nonce.as_slice(), tag.as_slice(), &ct].concat();
        assert_eq!(secretbox(&key, &data).unwrap(), b"hello");
        let swapped = [nonce.as_slice(), &ct, tag.as_slice()].concat();
        assert_eq!(secretbox(&key, &swapped), Err(CipherError::Authentication));
    }
}
