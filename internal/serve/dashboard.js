// trendfetch dashboard: one GET /v1/dashboard per refresh (one request of
// the client's rate limit); search and video pages on demand. Served as
// /dashboard.js: the Content-Security-Policy allows no inline script.
"use strict";
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const num = (n) => n == null ? "–" : Number(n).toLocaleString("en-US");
const utc = (t) => t ? t.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC") : "–";
const secs = (ms) => ms <= 0 ? "now" : ms < 120000 ? Math.ceil(ms / 1000) + " s" : ms < 7200000 ? Math.ceil(ms / 60000) + " min" : (ms / 3600000).toFixed(1) + " h";
const REFRESH_MS = 60000;
// words cuts s to at most n characters at a word boundary, with "…".
const words = (s, n) => { s = s ?? ""; if (s.length <= n) return s; const c = s.slice(0, n - 1); return c.slice(0, c.lastIndexOf(" ") > 0 ? c.lastIndexOf(" ") : c.length) + " …"; };
// reasonText is a run's reason for a table cell of n characters (the title
// attribute has it whole), as `trendfetch runs` shows it: URLs as host and
// path, and a long one cut in the middle at words, so that both what failed
// (its start) and the cause (its end) show.
const reasonText = (s, n) => {
  s = (s ?? "").replace(/"?https?:\/\/[^\s"]+"?/g, (raw) => {
    try { const u = new URL(raw.replace(/^"|"$/g, "")); return u.host + u.pathname; } catch { return raw; }
  }).replace(/\s+/g, " ").trim();
  if (s.length <= n) return s;
  const head = words(s, Math.ceil(n / 2)), tail = s.slice(s.length - Math.floor(n / 2) + 2);
  return head + " " + (tail.indexOf(" ") >= 0 ? tail.slice(tail.indexOf(" ") + 1) : tail);
};
// short writes a view count compactly: 33.5M, 812k.
const short = (n) => n >= 1e9 ? +(n / 1e9).toPrecision(3) + "B" : n >= 1e6 ? +(n / 1e6).toPrecision(3) + "M" : n >= 1e3 ? +(n / 1e3).toPrecision(3) + "k" : String(n);
// marked renders text with its highlights ([start, end) in code points,
// as /v1/search gives them) in <mark>, everything escaped.
const marked = (text, marks) => {
  const cp = Array.from(text ?? "");
  let html = "", at = 0;
  for (const [s, e] of marks ?? []) { html += esc(cp.slice(at, s).join("")) + "<mark>" + esc(cp.slice(s, e).join("")) + "</mark>"; at = e; }
  return html + esc(cp.slice(at).join(""));
};

// With a token, open the dashboard as /#token=... (the fragment never
// reaches the server or its logs).
const token = new URLSearchParams(location.hash.slice(1)).get("token");

// api GETs path; a 429 shows the notice (limited) and throws an error marked rateLimited.
async function api(path) {
  const headers = {"Accept": "application/json", ...(token ? {"Authorization": "Bearer " + token} : {})};
  const r = await fetch(path, {headers});
  const body = await r.json().catch(() => ({}));
  if (r.status === 429) {
    const ra = Number(r.headers.get("Retry-After")) || 60;
    limited(ra);
    throw Object.assign(new Error(body.error ? body.error.message : "rate limited"), {rateLimited: true});
  }
  if (!r.ok) throw new Error(body.error ? body.error.message : r.status + " " + r.statusText);
  return body;
}

const notice = (text) => { $("notice").textContent = text; $("notice").hidden = !text; };
// limited shows that the API refused this client for now, and when it
// will try again.
let retryTimer = null;
function limited(retryAfter) {
  const at = new Date(Date.now() + retryAfter * 1000).toISOString().slice(11, 19);
  notice(`Rate limited: this client sent more requests than the API allows. ` +
    `The figures below are from the last successful refresh; the next try is in ${retryAfter} s (${at} UTC).`);
  clearTimeout(retryTimer);
  retryTimer = setTimeout(refresh, retryAfter * 1000);
}

// slotsText is a region's slots of the last day per outcome (trendfetch coverage), missed ones
// marked; "not scheduled here" without a schedule.
function slotsText(slots) {
  if (!slots) return '<span class="muted">not scheduled here</span>';
  const parts = Object.entries(slots).filter(([, n]) => n > 0).map(([k, n]) => `<span class="${k === "captured" || k === "running" ? "" : "bad"}">${n} ${esc(k)}</span>`);
  return parts.join(", ") || '<span class="muted">none yet</span>';
}

// renderHealth draws one row per region: is it fetching, and since when.
function renderHealth(regions, now) {
  if (!regions.length) { $("health").innerHTML = '<span class="muted">no regions configured or stored</span>'; return; }
  $("health").innerHTML = `<table><tr><th>Region</th><th>Last success</th><th class="num">Failures in a row</th><th>Last run</th><th>Next run</th><th>Slots, last 24 h</th><th>Units today (PT)</th></tr>` +
    regions.map((reg) => {
      const h = reg.health, age = h.last_success_at ? secs(Date.parse(now) - Date.parse(h.last_success_at)) + " ago" : "never";
      const reason = h.last_reason ? ` <span class="muted" title="${esc(h.last_reason)}">${esc(reasonText(h.last_reason, 120))}</span>` : "";
      const units = Object.entries(h.units_today).map(([k, v]) => k + " " + num(v)).join(", ") || "0";
      return `<tr class="region${reg.late ? " late" : ""}"><td><b>${esc(reg.region)}</b> <span class="muted">${esc(reg.name)}</span></td>
        <td>${utc(h.last_success_at)} <span class="${reg.late ? "bad" : "muted"}">(${age}${reg.late ? ", LATE: over twice the interval of " + secs(reg.interval_seconds * 1000) : ""})</span></td>
        <td class="num ${h.consecutive_failures ? "bad" : ""}">${h.consecutive_failures}</td>
        <td>${h.last_outcome ? `<span class="${/^(success|running)/.test(h.last_outcome) ? "" : "bad"}">${esc(h.last_outcome)}</span>${reason}` : '<span class="muted">no runs yet</span>'}</td>
        <td>${utc(reg.next_run)}</td><td>${slotsText(reg.slots_last_day)}</td><td>${esc(units)}</td></tr>`;
    }).join("") + "</table>";
}

function renderQuota(credentials) {
  $("quota").innerHTML = credentials.map((c) => {
    const rows = c.buckets.map((b) => {
      const full = b.remaining <= 0;
      return `<tr class="bucket"><td>${esc(b.name)}</td>
        <td><meter min="0" max="${Number(b.limit) || 1}" value="${Number(b.used) || 0}" high="${0.9 * (Number(b.limit) || 1)}"></meter></td>
        <td class="num">${num(b.used)} / ${num(b.limit)}</td>
        <td class="num">${num(b.remaining)} left</td>
        <td>${full ? '<span class="bad">exhausted</span> · ' : ""}1 unit in ${secs(b.retry_after_one_ms)}</td>
        <td class="num">${num(b.used_today)} today (PT)</td></tr>`;
    }).join("");
    const ex = c.exhausted_until ? ` · <span class="bad">exhausted upstream until ${utc(c.exhausted_until)}</span>` : "";
    const down = c.reachable ? "" : ` · <span class="bad">backend unreachable: ${esc(c.error)}</span>`;
    return `<div class="credential"><b>${esc(c.credential)}</b> <span class="muted">backend ${esc(c.backend)}</span>${ex}${down}
      <table>${rows}</table></div>`;
  }).join("") || '<span class="muted">no credentials</span>';
}

function renderRuns(runs) {
  if (!runs.length) { $("runs").innerHTML = '<span class="muted">no runs yet</span>'; return; }
  $("runs").innerHTML = `<table><tr><th>ID</th><th>Region</th><th>Host</th><th>Started (UTC)</th><th class="num">Videos</th><th>Units</th><th>Outcome</th><th>Reason</th></tr>` +
    runs.map((r) => `<tr class="run"><td>${r.id}</td><td>${esc(r.region)}</td><td>${esc(r.host)}</td><td>${utc(r.started_at)}</td>
      <td class="num">${r.videos}</td><td>${esc(Object.entries(r.units).map(([k, v]) => k + "=" + v).join(" "))}</td>
      <td class="${r.outcome === "success" ? "" : "bad"}">${esc(r.outcome)}</td><td class="muted" title="${esc(r.reason)}">${esc(reasonText(r.reason, 80))}</td></tr>`).join("") + "</table>";
}

function renderCharts(regions) {
  $("charts").innerHTML = regions.map((reg) => {
    let html = `<h3>${esc(reg.region)} <span class="muted">${esc(reg.name)} · next run ${utc(reg.next_run)}</span></h3>`;
    const c = reg.chart;
    if (!c) return html + '<div class="muted">no chart captured yet</div>';
    const vs = c.previous_captured_at ? ` · rank changes (computed by trendfetch) against the capture of ${utc(c.previous_captured_at)}` : "";
    html += `<div class="muted">captured ${utc(c.capture.captured_at)} (run ${c.capture.run_id}${c.capture.complete ? "" : ", PARTIAL"})${vs}; views as of that capture</div>
      <table><tr><th class="num">#</th><th title="computed by trendfetch"></th><th>Title</th><th>Channel</th><th class="num">Views</th></tr>` +
      c.entries.map((e) => {
        const move = !c.previous_captured_at ? "" : e.previous_rank == null ? '<span class="up">new</span>' :
          e.rank_change > 0 ? `<span class="up">▲${e.rank_change}</span>` : e.rank_change < 0 ? `<span class="down">▼${-e.rank_change}</span>` : "";
        return `<tr class="entry"><td class="num">${e.rank}</td><td>${move}</td>
          <td><a href="?video=${esc(encodeURIComponent(e.video_id))}" data-video="${esc(e.video_id)}">${esc(e.title)}</a></td><td>${esc(e.channel_title)}</td><td class="num">${num(e.view_count)}</td></tr>`;
      }).join("") + "</table>";
    return html;
  }).join("") || '<span class="muted">no regions configured</span>';
}

// fill sets the HTML of element id to what make resolves to, or shows the error it throws.
const fill = (id, make) => make().then((html) => { $(id).innerHTML = html; },
  (e) => { $(id).innerHTML = `<span class="bad">${esc(e.message)}</span>`; });

const search = (q) => fill("search", async () => {
  const {hits} = await api("/v1/search?limit=20&q=" + encodeURIComponent(q));
  return hits.length ? "<ol>" + hits.map((h) =>
    `<li class="hit"><a data-video="${esc(h.video_id)}">${esc(h.title)}</a> <span class="muted">— ${esc(h.channel_title)}${
      h.regions.length ? " · " + h.regions.map((r) => esc(r.region) + " best* #" + r.best_rank + ", #" + r.last_rank + " at " + utc(r.last_at)).join("; ") : ""}</span>
      <div class="snippet">${marked(h.snippet, h.highlights)}</div></li>`).join("") +
    '</ol><div class="muted computed">* best rank: computed by trendfetch from the stored charts.</div>'
    : `<span class="muted">no videos match “${esc(q)}”</span>`;
});

// sparkline draws views over time as an SVG polyline on a labelled
// y-axis (min, max and round ticks between; it need not start at 0, the
// labels say where it does), as wide as the page, with a dashed marker at
// each of YouTube's own changes (from the API) the series crosses.
function sparkline(points, changes) {
  const pts = points.filter((p) => p.view_count != null);
  if (pts.length < 2) return '<span class="muted">not enough statistics points for a chart</span>';
  const W = Math.max(280, $("video").clientWidth || 600), H = 210, L = 56, R = 12, T = 22, B = 24;
  const xs = pts.map((p) => Date.parse(p.at)), ys = pts.map((p) => p.view_count);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.max(...ys), y0 = Math.min(...ys) < y1 ? Math.min(...ys) : 0;
  const sx = (x) => L + (x1 === x0 ? 0 : (x - x0) / (x1 - x0) * (W - L - R));
  const sy = (y) => H - B - (y1 === y0 ? 0 : (y - y0) / (y1 - y0) * (H - T - B));
  const step = ((r) => { const p = 10 ** Math.floor(Math.log10(r)); return r / p >= 5 ? 5 * p : r / p >= 2 ? 2 * p : p; })(Math.max(1, (y1 - y0) / 4));
  const ticks = [y0];
  for (let v = Math.ceil(y0 / step) * step; v < y1; v += step) if (sy(y0) - sy(v) > 14 && sy(v) - sy(y1) > 14) ticks.push(v);
  if (y1 !== y0) ticks.push(y1);
  const axis = ticks.map((v) => `<line x1="${L}" x2="${W - R}" y1="${sy(v).toFixed(1)}" y2="${sy(v).toFixed(1)}" stroke="#eee"/>
    <text class="tick" x="${L - 4}" y="${(sy(v) + 4).toFixed(1)}" font-size="11" text-anchor="end">${short(v)}</text>`).join("");
  const marks = changes.filter((c) => c.affects === "view_count").map((c) => { const x = sx(Date.parse(c.date + "T00:00:00Z")), right = x > W / 2;
    return `<g class="change"><title>${esc(c.summary)}</title><line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${T}" y2="${H - B}" stroke="#c60" stroke-dasharray="4 3"/>
      <text x="${x.toFixed(1)}" y="${T - 4}" font-size="11" fill="#c60" text-anchor="${right ? "end" : "start"}">${esc(c.date)} YouTube change</text></g>`; }).join("");
  const line = pts.map((p, i) => sx(xs[i]).toFixed(1) + "," + sy(ys[i]).toFixed(1)).join(" ");
  return `<svg id="views-chart" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="views over time, each point at its capture time">
    ${axis}<text x="4" y="11" font-size="11" fill="#777">views</text>
    <polyline fill="none" stroke="#3a7" stroke-width="2" points="${line}"/>${marks}
    <text x="${L}" y="${H - 6}" font-size="11">${utc(pts[0].at)}</text>
    <text x="${W - R}" y="${H - 6}" font-size="11" text-anchor="end">${utc(pts[pts.length - 1].at)}</text></svg>`;
}

const showVideo = (id) => fill("video", async () => {
  const h = await api("/v1/videos/" + encodeURIComponent(id));
  Object.assign($("video-title"), {hidden: false, textContent: h.video.title}).scrollIntoView();
  return `<div class="muted">${esc(h.video.channel_title)} · ${num(h.video.view_count)} views as of ${utc(h.video.last_seen_at)}</div>` +
    sparkline(h.points, h.changes) + (h.changes.length ? '<ul class="changes">' + h.changes.map((c) =>
      `<li>Not comparable as-is across ${esc(c.date)}: YouTube changed ${esc(c.affects)}: ${esc(c.summary)} (<a href="${esc(c.source)}" rel="noreferrer">source</a>).</li>`).join("") + "</ul>" : "") +
    "<table><tr><th>Region</th><th>First (UTC)</th><th>Last (UTC)</th><th class=num>Best rank*</th><th class=num>Days on chart*</th></tr>" +
    h.regions.map((r) => `<tr><td>${esc(r.region)}</td><td>${utc(r.first_at)}</td><td>${utc(r.last_at)}</td><td class="num">#${r.best_rank}</td><td class="num">${r.days}</td></tr>`).join("") +
    '</table><div class="muted computed">* computed by trendfetch from the captures between First and Last.</div>';
});

// A video has a URL of its own: /?video=ID (the token stays in the fragment).
const videoParam = () => new URLSearchParams(location.search).get("video");
document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a[data-video]");
  if (a) { ev.preventDefault(); history.pushState(null, "", "?video=" + encodeURIComponent(a.dataset.video) + location.hash); showVideo(a.dataset.video); }
});
window.addEventListener("popstate", () => { if (videoParam()) showVideo(videoParam()); });
if (videoParam()) showVideo(videoParam());
$("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); const q = $("q").value.trim(); if (q) search(q); });

async function refresh() {
  clearTimeout(retryTimer);
  retryTimer = setTimeout(refresh, REFRESH_MS); // a 429 replaces it (limited)
  try {
    const d = await api("/v1/dashboard");
    notice("");
    $("now").textContent = "updated " + utc(d.generated_at.replace(/\.\d+Z$/, "Z")) + " · times in UTC";
    renderHealth(d.regions, d.generated_at);
    renderQuota(d.credentials);
    renderRuns(d.runs);
    renderCharts(d.regions);
  } catch (e) {
    if (!e.rateLimited) notice("Cannot refresh: " + e.message);
  }
  document.body.dataset.loaded = "true";
}
refresh();
