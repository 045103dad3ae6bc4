//! The HTML report: one self-contained file (no network), with a timeline
//! per key (revisions as marks coloured by change class, findings
//! highlighted), collapsible field diffs and a table of finding groups that
//! sorts and filters, each group with its sample. The page renders itself from the report's JSON, embedded inline.

use super::escape::{html, html_script_json};
use super::ReportData;
use crate::human_time::stored;
use jiff::Timestamp;
use std::collections::BTreeMap;

const STYLE: &str = r#"
:root { --bg:#0f1419; --panel:#171d24; --ink:#e6e6e6; --mute:#8b98a5; --line:#2a333d; --accent:#4ea1ff; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif; background:var(--bg); color:var(--ink); }
a { color:var(--accent); }
header { padding:20px 28px; border-bottom:1px solid var(--line); background:var(--panel); }
header h1 { margin:0 0 4px; font-size:20px; } header p { margin:0; color:var(--mute); }
header p.verdict { margin-top:8px; color:var(--ink); font-weight:600; }
main { padding:20px 28px; display:grid; grid-template-columns:minmax(0, 1fr); gap:20px; }
section { background:var(--panel); border:1px solid var(--line); border-radius:10px; padding:16px 18px; }
h2 { margin:0 0 12px; font-size:16px; }
table { width:100%; border-collapse:collapse; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--mute); font-weight:600; cursor:pointer; user-select:none; white-space:nowrap; }
th.sorted::after { content:" ▾"; } th.sorted.asc::after { content:" ▴"; }
.cards { display:flex; gap:12px; flex-wrap:wrap; }
.card { flex:1 1 140px; border:1px solid var(--line); border-radius:8px; padding:10px 12px; }
.card b { display:block; font-size:22px; }
.sev { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; font-weight:600; }
.sev-critical { background:#ff4d4f; color:#fff; } .sev-high { background:#ff7a45; color:#111; }
.sev-medium { background:#ffc53d; color:#111; } .sev-low { background:#40a9ff; color:#111; } .sev-info { background:#5c6b7a; color:#fff; }
input[type=search] { width:320px; max-width:100%; padding:6px 10px; border-radius:6px; border:1px solid var(--line); background:var(--bg); color:var(--ink); margin-bottom:10px; }
.timeline { margin:14px 0 6px; } .timeline h3 { margin:0 0 4px; font-size:13px; font-family:ui-monospace,monospace; font-weight:500; }
svg .mark { stroke:var(--bg); stroke-width:1.5; } svg .hit { fill:none; stroke:#ff4d4f; stroke-width:2.5; }
svg text { fill:var(--mute); font-size:10px; }
svg .cluster { cursor:pointer; } svg .cluster circle { fill:#2a333d; stroke:var(--mute); stroke-width:1; }
svg .cluster text.count { fill:var(--ink); font-size:10px; font-weight:600; }
.strip { width:100%; } td, .finding, .mono, h3 { overflow-wrap:anywhere; } section { min-width:0; overflow-x:auto; }
@media (max-width:760px) { header, main { padding:12px; } section { padding:12px; } th, td { padding:4px 5px; } }
details { margin:2px 0 0 4px; } summary { cursor:pointer; color:var(--mute); }
code, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12.5px; }
tr.sample td { border-bottom:1px solid var(--line); padding:2px 8px 10px 24px; } .finding { margin:4px 0; } .more { color:var(--mute); margin:4px 0; }
.legend span { margin-right:14px; white-space:nowrap; } .legend i { display:inline-block; width:10px; height:10px; border-radius:50%; margin-right:4px; }
"#;

const SCRIPT: &str = r#"
const colours = { create:'#52c41a', delete:'#ff4d4f', rewrite:'#ffc53d', 'encoding-only':'#faad14', 'metadata-only':'#8c8c8c',
  'status-only':'#13c2c2', spec:'#4ea1ff', mixed:'#b37feb', 'first-seen':'#5c6b7a', unknown:'#434343' };
const order = { critical:0, high:1, medium:2, low:3, info:4 };
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === 'class') e.className = v; else e.setAttribute(k, v); }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
function svg(tag, attrs) { const e = document.createElementNS('http://www.w3.org/2000/svg', tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; }
function short(v) { const s = v === null ? '(absent)' : (typeof v === 'string' ? v : JSON.stringify(v)); return s.length > 80 ? s.slice(0, 79) + '…' : s; }

// One report (a fleet report has one per cluster), inside `root`.
function renderReport(root) {
const data = JSON.parse(root.querySelector('.report-data').textContent);
// A UTC time as the page shows it: with --local, in the zone the report was
// made in (the embedded data stays UTC, as the JSON report is).
const times = JSON.parse(root.querySelector('.report-times').textContent);
const at = t => times[t] || t;
const part = name => root.querySelector('.' + name);
// Cards.
const cards = part('cards');
const bySev = {}; let total = 0;
for (const by of Object.values(data.summary.findings)) for (const [s, n] of Object.entries(by)) { bySev[s] = (bySev[s] || 0) + n; total += n; }
cards.append(el('div', {class:'card'}, el('b', {}, total), 'findings'));
for (const s of ['critical','high','medium','low','info']) if (bySev[s]) cards.append(el('div', {class:'card'}, el('b', {}, bySev[s]), s));
cards.append(el('div', {class:'card'}, el('b', {}, data.runs.length), 'runs'));
const writes = data.summary.writes_by_class.reduce((n, [, c]) => n + c, 0);
cards.append(el('div', {class:'card'}, el('b', {}, writes), 'revisions'));
for (const l of data.summary.lifecycle) cards.append(el('div', {class:'card', title: l.objects.join('\n')}, el('b', {}, l.findings), l.topic));

// Findings, grouped by detector, resource and namespace: sortable and
// filterable; each group opens on its sample and the command for the rest.
function title(g) {
  const r = g.resource || 'other keys';
  return g.every_object ? `every ${r} object` : g.namespace ? `${r} · namespace ${g.namespace}` : r;
}
function span(g) { return g.first_revision === null ? '-' : g.first_revision === g.last_revision ? String(g.first_revision) : `${g.first_revision}–${g.last_revision}`; }
const body = part('findings-body');
function renderGroups(groups) {
  const out = [];
  for (const g of groups) {
    out.push(el('tr', {class:'group'},
      el('td', {}, el('span', {class:'sev sev-' + g.severity}, g.severity)), el('td', {}, g.detector),
      el('td', {}, title(g)), el('td', {}, g.count), el('td', {class:'mono'}, span(g))));
    const detail = el('td', {colspan:5});
    for (const f of g.sample) detail.append(el('div', {class:'finding'}, el('span', {class:'sev sev-' + f.severity}, f.severity), ' ', f.summary,
      el('div', {class:'mono'}, f.keys.join('\n') + (f.revisions.length ? ' @ ' + f.revisions.join(', ') : ''))));
    if (g.count > g.sample.length) detail.append(el('div', {class:'more'}, `and ${g.count - g.sample.length} more: `, el('code', {}, 'etcd-inspector ' + g.command)));
    out.push(el('tr', {class:'sample'}, detail));
  }
  body.replaceChildren(...out);
}
let rows = data.groups.slice(); let sortKey = null; let asc = true;
function sortBy(key) {
  asc = key === sortKey ? !asc : true; sortKey = key;
  const val = g => key === 'severity' ? order[g.severity] : key === 'count' ? -g.count : key === 'revisions' ? (g.first_revision || 0) : key === 'group' ? title(g) : String(g[key]);
  rows.sort((a, b) => (val(a) < val(b) ? -1 : val(a) > val(b) ? 1 : 0) * (asc ? 1 : -1));
  root.querySelectorAll('.findings th').forEach(th => { th.classList.toggle('sorted', th.dataset.key === key); th.classList.toggle('asc', th.dataset.key === key && asc); });
  applyFilter();
}
function applyFilter() {
  const q = part('filter').value.toLowerCase();
  renderGroups(rows.filter(g => !q || JSON.stringify(g).toLowerCase().includes(q)));
}
root.querySelectorAll('.findings th').forEach(th => th.addEventListener('click', () => sortBy(th.dataset.key)));
part('filter').addEventListener('input', applyFilter);
sortBy('severity');

// Who wrote a revision and when, once `attribute` read an audit log.
const writer = r => {
  const w = r.written_by;
  if (!w) return '';
  const agent = w.user_agent ? ` (${w.user_agent.split(' ')[0]})` : '';
  return ` · ${w.user}${agent} ${w.verb}${w.subresource ? ' ' + w.subresource : ''} at ${at(r.written_at)}${w.match === 'by-order' ? ', by order' : ''}`;
};

// Legend and timelines.
const legend = part('legend');
for (const [c, col] of Object.entries(colours)) legend.append(el('span', {}, el('i', {style:'background:' + col}), c));
legend.append(el('span', {}, el('i', {style:'background:#2a333d;outline:1px solid #8b98a5'}), 'several revisions: click to spread them out'));
const hits = new Set(data.groups.flatMap(g => g.sample).flatMap(f => f.revisions.map(r => f.keys[0] + '@' + r)));
const timelines = part('timelines');
const drawn = [];
for (const t of data.timelines) {
  const axis = el('div', {class:'more'}), strip = el('div', {class:'strip'});
  const box = el('div', {class:'timeline'}, el('h3', {}, t.key), axis, strip);
  if (t.omitted) box.append(el('div', {class:'more'}, `${t.omitted} more revisions not shown: etcd-inspector history ${t.key}`));
  for (const r of t.revisions) {
    const changes = (r.diff || []).filter(c => c.path !== 'metadata.managedFields');
    if (t.left[r.mod_revision]) box.append(el('div', {class:'more'}, `revision ${r.mod_revision} · ${t.left[r.mod_revision]}`));
    if (!changes.length) continue;
    const d = el('details', {}, el('summary', {}, `revision ${r.mod_revision} · ${r.change_class || '-'} · ${changes.length} field(s)${writer(r)}`));
    const tbl = el('table', {}, el('tr', {}, el('th', {}, 'field'), el('th', {}, 'old'), el('th', {}, 'new'), el('th', {}, 'by')));
    for (const c of changes) tbl.append(el('tr', {}, el('td', {class:'mono'}, c.path), el('td', {class:'mono'}, short(c.old)), el('td', {class:'mono'}, short(c.new)), el('td', {}, c.managers.join(', '))));
    d.append(tbl); box.append(d);
  }
  timelines.append(box);
  // On a time axis when the clock places every revision (the middle of
  // its written_between), else one step per revision.
  const mids = t.revisions.map(r => (r.written_between || []).every(x => x) ? (Date.parse(r.written_between[0]) + Date.parse(r.written_between[1])) / 2 : NaN);
  const timed = mids.length > 1 && mids.every(m => !isNaN(m)) && mids[mids.length - 1] > mids[0];
  drawn.push({t, axis, strip, mids, timed, spread: null});
}
// Draws one timeline as wide as the page lets it: marks closer than a
// mark's width become one cluster with its count, which a click spreads
// out (its revisions one step apart) until "show all".
const GAP = 22;
function draw(d) {
  const {t, axis, strip, mids, timed} = d;
  const w = Math.max(200, strip.clientWidth), h = 48;
  const shown = d.spread || t.revisions.map((_, i) => i);
  const byTime = timed && !d.spread;
  const x0 = mids[0], span = mids[mids.length - 1] - mids[0];
  const place = k => byTime ? 20 + (mids[shown[k]] - x0) / span * (w - 40)
    : 20 + (shown.length > 1 ? k / (shown.length - 1) : 0.5) * (w - 40);
  axis.replaceChildren();
  if (byTime) axis.append(`time axis: ${at(new Date(x0).toISOString())} to ${at(new Date(x0 + span).toISOString())} (each mark at the middle of the interval the clock gives)`);
  else axis.append(`revisions in order${d.spread ? `: ${shown.length} of ${t.revisions.length} spread out ` : ''}`);
  if (d.spread) { const all = el('a', {href:'#'}, 'show all'); all.addEventListener('click', e => { e.preventDefault(); d.spread = null; draw(d); }); axis.append(all); }
  const s = svg('svg', {width:w, height:h, viewBox:`0 0 ${w} ${h}`, role:'img'});
  s.append(svg('line', {x1:10, y1:18, x2:w - 10, y2:18, stroke:'#2a333d', 'stroke-width':2}));
  // Consecutive marks within GAP of their group's first one group.
  const groups = [];
  shown.forEach((i, k) => {
    const x = place(k), last = groups[groups.length - 1];
    if (last && x - last.x < GAP) last.members.push(i); else groups.push({x, members:[i]});
  });
  // A label is left out where it would run into the one before.
  let labelled = -Infinity;
  for (const g of groups) {
    const first = t.revisions[g.members[0]], end = t.revisions[g.members[g.members.length - 1]];
    const label = svg('text', {x:g.x, y:42, 'text-anchor':'middle'});
    if (g.members.length === 1) {
      const r = first, cls = r.change_class || 'unknown';
      const dot = svg('circle', {cx:g.x, cy:18, r:7, fill:colours[cls] || '#888', class:'mark'});
      const tip = svg('title', {}); tip.textContent = `revision ${r.mod_revision}: ${cls}${r.change_cause ? ' (' + r.change_cause + ')' : ''}${writer(r)}`; dot.append(tip);
      s.append(dot);
      if (hits.has(t.key + '@' + r.mod_revision)) s.append(svg('circle', {cx:g.x, cy:18, r:10.5, class:'hit'}));
      label.textContent = r.mod_revision;
    } else {
      const c = svg('g', {class:'cluster', 'data-count':g.members.length});
      c.append(svg('circle', {cx:g.x, cy:18, r:9.5}));
      const n = svg('text', {x:g.x, y:21.5, 'text-anchor':'middle', class:'count'}); n.textContent = g.members.length; c.append(n);
      const tip = svg('title', {}); tip.textContent = `${g.members.length} revisions, ${first.mod_revision} to ${end.mod_revision}: click to spread them out`; c.append(tip);
      c.addEventListener('click', () => { d.spread = g.members; draw(d); });
      s.append(c);
      if (g.members.some(i => hits.has(t.key + '@' + t.revisions[i].mod_revision))) s.append(svg('circle', {cx:g.x, cy:18, r:12.5, class:'hit'}));
      label.textContent = `${first.mod_revision}–${end.mod_revision}`;
    }
    const half = label.textContent.length * 3.2;
    if (g.x - half > labelled + 4) { s.append(label); labelled = g.x + half; }
  }
  strip.replaceChildren(s);
}
drawn.forEach(draw);
let resized;
window.addEventListener('resize', () => { clearTimeout(resized); resized = setTimeout(() => drawn.forEach(draw), 100); });

// Runs.
const runs = part('runs-body');
for (const r of data.runs) runs.append(el('tr', {}, el('td', {}, r.id), el('td', {}, r.status), el('td', {class:'mono'}, (r.kind === 'live' ? '' : r.kind + ':') + r.source), el('td', {}, at(r.started_at)),
  el('td', {}, r.head_revision ?? '-'), el('td', {}, r.history_from ?? '-'), el('td', {}, r.gaps.map(g => g.from_revision + '-' + g.to_revision).join(', ') || 'none')));
}
document.querySelectorAll('.report').forEach(renderReport);
document.body.dataset.rendered = 'true';
// Whether the page is wider than the window (it reflows down to 700 px).
document.body.dataset.overflows = String(document.documentElement.scrollWidth > document.documentElement.clientWidth);
"#;

/// One report's parts, which the script fills from its embedded JSON.
fn report_parts(r: &ReportData) -> String {
    let json = html_script_json(&serde_json::to_string(r).expect("report data serializes"));
    let times = html_script_json(&serde_json::to_string(&shown_times(r)).expect("strings serialize"));
    format!(
        r#"<main class="report">
<section><h2>Summary</h2><div class="cards"></div></section>
<section><h2>Findings</h2><input class="filter" type="search" placeholder="Filter findings…">
<table class="findings"><thead><tr><th data-key="severity">severity</th><th data-key="detector">detector</th><th data-key="group">objects</th><th data-key="count">findings</th><th data-key="revisions">revisions</th></tr></thead>
<tbody class="findings-body"></tbody></table></section>
<section><h2>Timelines</h2><div class="legend"></div><div class="timelines"></div></section>
<section><h2>Runs</h2><table><thead><tr><th>run</th><th>status</th><th>source</th><th>started</th><th>head</th><th>history from</th><th>gaps</th></tr></thead><tbody class="runs-body"></tbody></table></section>
<script type="application/json" class="report-data">{json}</script>
<script type="application/json" class="report-times">{times}</script>
</main>
"#
    )
}

/// Each UTC time the script shows and how to show it, where the two differ
/// (with `--local`): the runs' starts, the audit times of revisions, and
/// the middle of each revision's clock interval as the time axis writes it
/// (`Date.toISOString()` of the mean of its ends in milliseconds).
fn shown_times(r: &ReportData) -> BTreeMap<String, String> {
    let rows = r.timelines.iter().flat_map(|t| &t.revisions);
    let millis = |t: &Option<String>| Some(t.as_deref()?.parse::<Timestamp>().ok()?.as_millisecond());
    let middles = rows.clone().filter_map(|row| {
        let [from, to] = &row.written_between;
        let middle = (millis(from)? + millis(to)?).div_euclid(2);
        let middle = Timestamp::from_millisecond(middle).ok()?;
        Some(middle.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
    });
    let exact = rows.filter_map(|row| row.written_at.clone());
    let started = r.runs.iter().map(|run| run.started_at.to_string());
    started
        .chain(exact)
        .chain(middles)
        .filter_map(|utc| {
            let shown = stored(&utc);
            (shown != utc).then_some((utc, shown))
        })
        .collect()
}

/// A page holding `content` under `title`.
fn page(title: &str, subtitle: &str, content: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{STYLE}</style></head>
<body>
<header><h1>{title}</h1><p class="mono">{subtitle}</p></header>
{content}<script>{SCRIPT}</script>
</body></html>
"#
    )
}

/// The page.
pub fn render(r: &ReportData) -> String {
    let cluster = r
        .cluster
        .as_deref()
        .map(|c| format!("cluster {} · ", html(c)))
        .unwrap_or_default();
    let subtitle = format!(
        "{cluster}{} · generated {}</p><p class=\"verdict\">{}",
        html(&r.database),
        html(&stored(&r.generated_at)),
        html(&r.summary.verdict())
    );
    page("etcd-inspector report", &subtitle, &report_parts(r))
}

/// The fleet page: a table of clusters × detectors linking to each
/// cluster's report below it.
pub fn render_fleet(r: &super::fleet::FleetReport) -> String {
    let fleet = &r.fleet;
    let mut table = String::from("<main><section><h2>Clusters</h2><table class=\"fleet\"><thead><tr>");
    for h in fleet.header() {
        table += &format!("<th>{}</th>", html(h));
    }
    table += "</tr></thead><tbody>";
    for row in &fleet.clusters {
        table += &format!(
            "<tr><td><a href=\"#{}\">{}</a></td>",
            html(&row.anchor),
            html(&row.cluster)
        );
        for n in fleet.counts(row) {
            table += &format!("<td>{n}</td>");
        }
        table += "</tr>";
    }
    table += "</tbody></table></section></main>\n";
    for (_, section) in &r.sections {
        let cluster = section.cluster.as_deref().unwrap_or("-");
        table += &format!(
            "<header id=\"{}\"><h1>Cluster {}</h1></header>\n",
            html(&super::fleet::anchor(cluster)),
            html(cluster)
        );
        table += &report_parts(section);
    }
    let subtitle = format!(
        "{} clusters · {} · generated {}",
        fleet.clusters.len(),
        html(&r.database),
        html(&stored(&r.generated_at))
    );
    page("etcd-inspector fleet report", &subtitle, &table)
}
