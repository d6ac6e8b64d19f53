#include "am/status/status_page.h"

#include "rest/web_page.h"

namespace tide::am {
namespace {

// It reads the same JSON API as `tide status` (relative URLs, so it also works behind a path
// prefix), and nothing else: the history server serves this page over an ended application's
// documents. Elements the browser test reads: #points (points plotted), #executors rows with
// data-executor-id, #decisions rows (data-repeats), #capacity (data-fit-now, data-fit-total),
// #timeline bars (data-executor-id, data-ended) and markers, #stages rows (data-stage),
// #removed rows (data-executor-id, data-reason), #failedTasks items with data-task, the
// a[data-log] links and #logView.
constexpr std::string_view kStyle = R"css(:root {
  --target: #2563eb; --live: #16a34a; --busy: #ea580c; --tasks: #94a3b8; --bound: #dc2626;
}
main { padding: 14px 24px 24px; max-width: 1440px; margin: 0 auto; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(118px, 1fr)); gap: 10px;
  margin-bottom: 14px; }
.card { background: var(--card); border: 1px solid var(--border); border-radius: 8px;
  padding: 7px 12px; }
.card .label { color: var(--muted); font-size: 11px; text-transform: uppercase;
  letter-spacing: .05em; white-space: nowrap; }
.card .value { font-size: 21px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .value small { font-size: 13px; color: var(--muted); font-weight: 500; }
.head { display: flex; align-items: center; gap: 16px; margin-bottom: 8px; flex-wrap: wrap; }
.legend { display: flex; gap: 14px; font-size: 12px; color: var(--muted); flex-wrap: wrap; }
.swatch { display: inline-block; width: 16px; height: 3px; vertical-align: middle;
  margin-right: 5px; border-radius: 2px; }
.swatch.dashed { height: 0; border-top: 2px dashed var(--bound); background: none; }
.swatch.area { height: 10px; background: rgba(148, 163, 184, .35); border-top: 2px solid var(--tasks); }
.logs a { margin-left: 6px; font-size: 11px; }
#failedTasks { margin: 0; padding-left: 18px; font-size: 13px; }
#logView { max-height: 320px; overflow: auto; background: var(--card); border: 1px solid var(--border);
  border-radius: 6px; padding: 8px; font-size: 12px; white-space: pre-wrap; }
#readout { font-size: 12px; color: var(--muted); margin-left: auto; min-height: 18px;
  font-variant-numeric: tabular-nums; }
.chartbox { position: relative; }
canvas { width: 100%; height: 300px; display: block; }
form.bounds { display: flex; gap: 6px; align-items: center; font-size: 12px; color: var(--muted); }
form.bounds input { width: 58px; padding: 3px 5px; border: 1px solid var(--border);
  border-radius: 5px; font: inherit; color: var(--text); }
form.bounds button { padding: 3px 10px; border: 1px solid #1d4ed8; background: var(--target);
  color: #fff; border-radius: 5px; font: inherit; cursor: pointer; }
#boundsMsg { font-size: 12px; }
#boundsMsg.err { color: var(--bound); }
.grid2 { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 14px; }
@media (max-width: 1100px) { .grid2 { grid-template-columns: minmax(0, 1fr); } }
.pill { font-size: 11px; padding: 1px 7px; border-radius: 10px; font-weight: 600; white-space: nowrap; }
.BUSY { background: #ffedd5; color: #9a3412; }
.IDLE { background: #dcfce7; color: #166534; }
.PENDING_REMOVAL { background: #fee2e2; color: #991b1b; }
.DECOMMISSIONING { background: #fef3c7; color: #92400e; }
.RUNNING { background: #dbeafe; color: #1e40af; }
.SUCCEEDED { background: #dcfce7; color: #166534; }
.FAILED { background: #fee2e2; color: #991b1b; }
.act { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11.5px;
  white-space: nowrap; }
.act.raise_target { color: #1d4ed8; } .act.lower_target { color: #7c3aed; }
.act.remove { color: #b91c1c; } .act.not_adding, .act.keep { color: #6b7280; }
.act.waiting, .act.lost { color: #b45309; }
.rep { color: var(--muted); font-size: 11px; white-space: nowrap; }
.bar { height: 6px; background: #e5e7eb; border-radius: 3px; overflow: hidden; min-width: 80px; }
.bar > div { height: 100%; background: var(--live); }
.swatch.live { height: 5px; background: var(--live); opacity: .45; }
.swatch.busy { height: 0; border-top: 2px dashed var(--busy); background: none; }
#capacity { font-size: 12px; color: var(--muted); margin: 6px 0 0; }
#capacity b { color: var(--text); font-variant-numeric: tabular-nums; }
.stagebar { position: relative; height: 10px; background: #e5e7eb; border-radius: 3px;
  overflow: hidden; min-width: 140px; display: flex; }
.stagebar .done { background: var(--live); } .stagebar .run { background: var(--target); }
.stagebar .fail { background: var(--bound); }
.tl { position: relative; font-size: 11px; }
.tl .lane { position: relative; height: 12px; margin: 2px 0; }
.tl .lbl { position: absolute; left: 0; width: 64px; color: var(--muted); white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; line-height: 12px; }
.tl .track { position: absolute; left: 70px; right: 8px; top: 0; bottom: 0; }
.tl .ebar { position: absolute; top: 2px; height: 8px; border-radius: 2px; background: var(--live);
  min-width: 2px; }
.tl .ebar.ended { background: #94a3b8; }
.tl .ebar.ended.lost, .tl .ebar.ended.memory, .tl .ebar.ended.exit,
.tl .ebar.ended.heartbeat_timeout, .tl .ebar.ended.node_lost { background: var(--bound); }
.tl .sbar { position: absolute; top: 1px; height: 10px; border-radius: 2px;
  background: rgba(37, 99, 235, .25); border-left: 2px solid var(--target); min-width: 2px;
  overflow: hidden; white-space: nowrap; color: #1e3a8a; line-height: 10px; font-size: 9.5px;
  padding-left: 2px; box-sizing: border-box; }
.tl .sbar.FAILED { border-left-color: var(--bound); background: rgba(220, 38, 38, .2); }
.tl .jmark { position: absolute; top: 0; bottom: 0; width: 0; border-left: 1px dashed #7c3aed; }
.tl .jmark.end { border-left-style: solid; }
.tl .jname { position: absolute; top: 0; padding-left: 3px; color: #6d28d9; white-space: nowrap;
  font-size: 10px; line-height: 12px; }
.tl .jname.end { transform: translateX(-100%); padding: 0 3px 0 0; }
.tl .axis { position: relative; height: 14px; color: var(--muted); }
.tl .axis span { position: absolute; transform: translateX(-50%); }
/* A lost container's reason carries its stderr tail: a few lines here, all of it on hover. */
.clamp { display: -webkit-box; -webkit-line-clamp: 3; -webkit-box-orient: vertical;
  overflow: hidden; overflow-wrap: anywhere; }
.more { color: var(--muted); font-size: 11px; font-style: italic; margin-top: 4px; }
.pill.idle_timeout, .pill.decommissioned { background: #f1f5f9; color: #334155; }
.pill.heartbeat_timeout, .pill.memory, .pill.exit, .pill.node_lost, .pill.lost
  { background: #fee2e2; color: #991b1b; }
.pill.preempted, .pill.killed, .pill.released, .pill.success { background: #fef3c7; color: #92400e; }
.act.cancel_requests, .act.request { color: #0f766e; }
)css";

constexpr std::string_view kBody = R"html(<header>
  <h1>tide</h1>
  <span class="meta" id="app">application master</span>
  <span class="meta" id="uptime"></span>
  <span id="conn">connecting…</span>
</header>
<main>
  <div class="cards" id="cards"></div>
  <section>
    <div class="head">
      <h2>Executors over time</h2>
      <div class="legend">
        <span><i class="swatch" style="background:var(--target)"></i>target</span>
        <span><i class="swatch live"></i>live (wide, under)</span>
        <span><i class="swatch busy"></i>busy (dashed, on top)</span>
        <span><i class="swatch area"></i>pending tasks (right axis)</span>
        <span><i class="swatch dashed"></i>min / max executors</span>
        <span><span id="points">0</span> points</span>
      </div>
      <span id="readout"></span>
    </div>
    <div class="chartbox"><canvas id="chart" data-points="0"></canvas></div>
    <div id="capacity" data-fit-now="" data-fit-total="">cluster capacity: waiting for the first heartbeat…</div>
    <div class="head" style="margin: 10px 0 0">
      <form class="bounds" id="boundsForm">
        <span>Change bounds:</span>
        <label>min <input name="min" type="number" min="0" inputmode="numeric"></label>
        <label>initial <input name="initial" type="number" min="0" inputmode="numeric"></label>
        <label>max <input name="max" type="number" min="1" inputmode="numeric"></label>
        <button type="submit">Apply</button>
        <span id="boundsMsg"></span>
      </form>
    </div>
  </section>
  <div class="grid2">
    <section>
      <div class="head"><h2>Executors</h2><span class="meta rep" id="execCount"></span></div>
      <table id="executors">
        <thead><tr><th>id</th><th>host</th><th>container</th><th>state</th><th class="num">tasks</th>
          <th class="num">idle for</th><th>data</th><th>expires</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
    <section>
      <div class="head"><h2>Allocation decisions</h2><span class="rep">newest first; a run of one kind is one row</span></div>
      <table id="decisions">
        <thead><tr><th>at</th><th>action</th><th class="num">target</th><th>why</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
  </div>
  <section>
    <div class="head"><h2>Timeline</h2>
      <div class="legend">
        <span><i class="swatch" style="background:var(--live);height:8px"></i>executor, live</span>
        <span><i class="swatch" style="background:#94a3b8;height:8px"></i>removed</span>
        <span><i class="swatch" style="background:var(--bound);height:8px"></i>lost / failed</span>
        <span><i class="swatch" style="background:rgba(37,99,235,.3);height:8px"></i>stage</span>
        <span><i class="swatch" style="height:0;border-top:1px dashed #7c3aed;background:none"></i>job start / end</span>
      </div>
      <span class="rep" id="timelineCount"></span>
    </div>
    <div class="tl" id="timeline"></div>
  </section>
  <div class="grid2">
    <section>
      <div class="head"><h2>Stages</h2><span class="rep" id="stageCount"></span></div>
      <table id="stages">
        <thead><tr><th>job / stage</th><th>state</th><th>progress</th>
          <th class="num">done / running / failed / total</th><th class="num">took</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
    <section>
      <div class="head"><h2>Removed executors</h2><span class="rep" id="removedCount"></span></div>
      <table id="removed">
        <thead><tr><th>id</th><th>host</th><th>reason</th><th class="num">lived</th>
          <th class="num">removed at</th><th>why</th><th class="logs">logs</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
  </div>
  <section>
    <div class="head"><h2>Jobs</h2></div>
    <table id="jobs">
      <thead><tr><th>id</th><th>name</th><th>state</th><th>progress</th><th class="num">tasks</th>
        <th class="num">pending</th><th class="num">running</th><th class="num">succeeded</th>
        <th class="num">failed attempts</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section>
    <div class="head"><h2>Failed task attempts</h2><span class="rep">newest first</span></div>
    <ul id="failedTasks"></ul>
    <pre id="logView" hidden></pre>
  </section>
</main>
)html";

constexpr std::string_view kScript = R"js(const MAX_POINTS = 20000;
const UNBOUNDED = 1e9;  // maxExecutors left at its default (INT_MAX) is "no limit"
const view = { points: [], lastAt: -1, nowMs: 0, status: null, hover: null, ended: false };
// The states of an application that has ended, as the history server's status document says
// (from the event log; a live AM says RUNNING or STOPPING): nothing can change it any more, so
// the controls that would (the bounds form) go, and so do the log links, which the AM served.
const ENDED_STATES = ["SUCCEEDED", "FAILED", "KILLED", "INCOMPLETE"];
// The control token comes once in this page's URL (?token=..., as `tide run`, `tide submit`
// and `tide status` print it); it is kept in this tab's sessionStorage, taken out of the
// address bar (and so out of the history), and sent as a bearer header on every request.
const TOKEN = tokenFromAddress("tideControlToken");
function authHeaders(extra) { return bearerHeaders(TOKEN, extra); }

function fmtClock(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return (h > 0 ? h + ":" : "") + mm + ":" + String(sec).padStart(2, "0");
}
function fmtDur(ms) {
  if (ms === null || ms === undefined || ms < 0) return "–";
  if (ms < 1000) return ms + "ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + "s";
  if (ms < 3600000) return Math.floor(ms / 60000) + "m " + String(Math.floor(ms / 1000) % 60).padStart(2, "0") + "s";
  return Math.floor(ms / 3600000) + "h " + String(Math.floor(ms / 60000) % 60).padStart(2, "0") + "m";
}
function fmtMax(v) { return v >= UNBOUNDED ? "∞" : String(v); }
async function getJson(path) {
  const response = await fetch(path, { cache: "no-store", headers: authHeaders() });
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}

// stdout and stderr links of an executor or a failed task attempt (the AM fetches them from
// the node manager): clicked, the file is fetched with the token and shown in #logView.
function logLinks(base) {
  if (view.ended) return "";
  return el("span", { class: "logs" }, ["stdout", "stderr"].map((name) => {
    const link = el("a", { href: base + "/logs/" + name, text: name, "data-log": name });
    link.addEventListener("click", async (event) => {
      event.preventDefault();
      const pane = document.getElementById("logView");
      pane.hidden = false;
      pane.dataset.source = link.getAttribute("href");
      try {
        const response = await fetch(link.getAttribute("href"), { cache: "no-store", headers: authHeaders() });
        const text = await response.text();
        pane.textContent = response.ok ? text : "HTTP " + response.status + ": " + text;
      } catch (error) {
        pane.textContent = error.message;
      }
    });
    return link;
  }));
}

async function refreshFailures() {
  try {
    const data = await getJson("api/v1/jobs");
    const failed = data.jobs.flatMap((j) => j.failures || []).reverse().slice(0, 50);
    const items = failed.map((f) => el("li", { "data-task": f.stage + ":" + f.index + ":" + f.attempt }, [
      f.stage + ":" + f.index + " attempt " + f.attempt + " on " + f.executor + ": " + f.reason,
      logLinks("api/v1/tasks/" + encodeURIComponent(f.stage) + "/" + f.index + "/" + f.attempt)]));
    if (items.length === 0) items.push(el("li", { class: "empty", text: "no failed attempts" }));
    document.getElementById("failedTasks").replaceChildren(...items);
  } catch (error) {
    // refresh() says when the AM cannot be reached.
  } finally {
    setTimeout(refreshFailures, 3000);
  }
}

function renderCards(s) {
  const a = s.allocation, t = s.tasks;
  const cards = [
    ["target", a.target], ["live", a.live], ["busy", a.busy], ["idle", a.idle],
    ["requested", a.pending], ["max needed", a.maxNeeded],
    ["pending tasks", t.pending], ["running tasks", t.running],
    ["tasks done", t.succeeded + (t.failed ? " ✗" + t.failed : "")],
    ["bounds", a.min + " / " + a.initial + " / " + fmtMax(a.max)],
    ["cluster fits", s.capacity && s.capacity.known ? s.capacity.executorsFitTotal : "unknown",
     s.capacity && s.capacity.known ? " +" + s.capacity.executorsFitNow + " now" : ""],
    ["next step", a.initializing ? "initializing" : "+" + a.numExecutorsToAdd],
  ];
  const box = document.getElementById("cards");
  box.replaceChildren(...cards.map(([label, value, note]) =>
      el("div", { class: "card" }, [el("div", { class: "label", text: label }),
                                    el("div", { class: "value" }, [String(value), note ? el("small", { text: note }) : ""])])));
  document.getElementById("app").innerHTML = "";
  document.getElementById("app").append(el("b", { text: s.applicationId }), " attempt " +
      s.attemptId.replace(/^.*_/, "") + " · " + s.state);
  document.getElementById("uptime").textContent = "up " + fmtDur(s.uptimeMs);
  const form = document.getElementById("boundsForm");
  if (view.ended) {
    if (form) form.parentElement.remove();
    return;
  }
  for (const name of ["min", "initial", "max"]) {
    form.elements[name].placeholder = fmtMax(a[name]);
  }
}

const MAX_EXECUTOR_ROWS = 50;
function renderExecutors(data) {
  const body = document.querySelector("#executors tbody");
  const rows = data.executors.map((e) => {
    const holds = [e.holdsCachedData ? "cached" : "", e.holdsShuffleData ? "shuffle" : ""]
        .filter(Boolean).join(", ") || "–";
    const expires = e.expiresInMs === null ? "never (" + e.expiry + ")"
        : "in " + fmtDur(e.expiresInMs) + (e.expiry ? " (" + e.expiry + ")" : "");
    // Container ids repeat the application id: the tail is what tells them apart.
    const container = e.container.replace(/^container_\d+_\d+_/, "…");
    return el("tr", { "data-executor-id": e.id }, [
      el("td", {}, [e.id, logLinks("api/v1/executors/" + encodeURIComponent(e.id))]),
      el("td", { text: e.host }),
      el("td", { text: container, title: e.container }),
      el("td", {}, [el("span", { class: "pill " + e.state, text: e.state.toLowerCase().replace("_", " ") }),
        e.excluded ? el("span", { class: "pill excluded", text: "excluded", title: "excludeOnFailure: no new tasks here" }) : "",
        // Started for a stage's own executor shape: it runs only that profile's stages' tasks.
        e.resourceProfileId > 0 ? el("span", { class: "pill profile", text: "profile " + e.resourceProfileId,
          title: e.cores + " cores, " + e.memoryMb + " MB: runs only tasks of stages of this shape" }) : ""]),
      el("td", { class: "num", text: e.runningTasks + "/" + e.cores }),
      el("td", { class: "num", text: e.idleForMs >= 0 ? fmtDur(e.idleForMs) : "–" }),
      el("td", { text: holds }), el("td", { class: "why", text: expires })]);
  });
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { colspan: "8", class: "empty", text: "no executors" })]));
  // Thousands of rows would push everything else off the page: the first ones, and how many more.
  if (rows.length > MAX_EXECUTOR_ROWS) {
    const more = rows.length - MAX_EXECUTOR_ROWS;
    rows.length = MAX_EXECUTOR_ROWS;
    rows.push(el("tr", {}, [el("td", { colspan: "8", class: "more", text: more + (view.ended ? " more executors" : " more live executors") })]));
  }
  body.replaceChildren(...rows);
  // An ended application's document lists every executor it had (REMOVED, or LIVE when its log
  // stopped first): what it was, not "N live".
  let count = data.executors.length + " live";
  if (view.ended) {
    const live = data.executors.filter((e) => e.state === "LIVE").length;
    const peak = view.points.reduce((most, p) => Math.max(most, p.live), 0);
    count = live + " live at the end · " + (data.executors.length + (data.dropped || 0)) +
        " ran · peak " + peak + " live";
  }
  document.getElementById("execCount").textContent = count;
}

function renderDecisions(data) {
  const body = document.querySelector("#decisions tbody");
  const rows = data.decisions.map((d) => {
    // A run of events (summary says what it did) or a state that held (its reason and since).
    const run = d.repeats > 1 && d.summary !== d.why;
    const at = run && fmtClock(d.atMs) !== fmtClock(d.lastMs)
        ? fmtClock(d.atMs) + "–" + fmtClock(d.lastMs) : fmtClock(d.lastMs);
    const why = run
        ? [d.summary, el("span", { class: "rep", text: "  ×" + d.repeats })]
        : [d.why, d.repeats > 1
            ? el("span", { class: "rep", text: "  ×" + d.repeats + " since " + fmtClock(d.atMs) }) : ""];
    return el("tr", { "data-repeats": String(d.repeats), title: run ? "first: " + d.firstWhy + "\nlast: " + d.why : "" }, [
      el("td", { class: "num", text: at }),
      el("td", {}, [el("span", { class: "act " + d.action, text: d.action })]),
      el("td", { class: "num", text: run && d.firstTarget !== d.target ? d.firstTarget + "→" + d.target : String(d.target) }),
      el("td", { class: "why" }, [el("div", { class: "clamp", title: d.why }, why)])]);
  });
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { colspan: "4", class: "empty", text: "no decisions yet" })]));
  body.replaceChildren(...rows);
}

// What the cluster could hold of executors of this size, next to the target: "target 137,
// live 2" explains itself when only 2 fit.
function renderCapacity(s) {
  const c = s.capacity, a = s.allocation, box = document.getElementById("capacity");
  if (!c) return;
  const size = c.executorMemoryMb + " MB, " + c.executorCores + (c.executorCores === 1 ? " core" : " cores");
  box.dataset.fitNow = c.known ? String(c.executorsFitNow) : "unknown";
  box.dataset.fitTotal = c.known ? String(c.executorsFitTotal) : "unknown";
  if (!c.known) {
    box.replaceChildren("cluster capacity for executors of " + size + ": ", el("b", { text: "unknown" }),
                        " (" + c.source + ")");
    return;
  }
  const parts = ["cluster capacity: ", el("b", { text: String(c.executorsFitTotal) }),
                 " executors of " + size + " fit on its live nodes in all, ",
                 el("b", { text: String(c.executorsFitNow) }), " more fit now"];
  // Granted containers whose executors are starting hold their room already.
  const reachable = a.live + (s.containers ? s.containers.starting : 0) + c.executorsFitNow;
  if (a.target > reachable) {
    parts.push(" — target " + a.target + " is beyond what fits: " + reachable + " can be live now" +
               (a.target > c.executorsFitTotal ? ", " + c.executorsFitTotal + " when the cluster is empty" : ""));
  }
  parts.push(" (" + c.source + ")");
  box.replaceChildren(...parts);
}

// Spark's event timeline: a bar per executor from registration to removal (or now) and the
// jobs' and stages' starts and ends on the same axis. Bounded, so thousands stay cheap.
const MAX_BARS = 60, MAX_STAGE_LANES = 4, MAX_JOB_MARKS = 20;
const REASONS = { idle_timeout: "idle timeout", heartbeat_timeout: "lost (no heartbeat)",
  memory: "killed for memory", exit: "exited with an error", preempted: "preempted",
  node_lost: "node lost", killed: "killed", released: "released", success: "exited",
  excluded: "excluded for failures", decommissioned: "decommissioned",
  decommission_unfinished: "decommission unfinished" };
function reasonLabel(r) { return REASONS[r] || r; }
// Documents without a field (an older AM's, an event log's) draw as if it were empty.
function removedOf(ex) { return ex.removed || []; }
function renderTimeline(s, ex) {
  const box = document.getElementById("timeline");
  const now = ex.nowMs;
  // Live ones first, then the newest removed.
  // An ended application's document (the history server's) lists its removed executors here
  // too, each with removedAtMs: their bars end there.
  const bars = ex.executors.map((e) => {
    const gone = e.removedAtMs !== undefined && e.removedAtMs >= 0;
    return { id: e.id, from: e.registeredAtMs, to: gone ? e.removedAtMs : null, cls: gone ? " ended" : "",
             title: e.id + " on " + e.host + (gone ? ", removed: " + e.removedReason : ", live") };
  })
      .concat(removedOf(ex).map((r) => ({ id: r.id, from: r.registeredAtMs >= 0 ? r.registeredAtMs : r.removedAtMs,
                                       to: r.removedAtMs, cls: " ended " + r.reason,
                                       title: r.id + " on " + r.host + ", " + reasonLabel(r.reason) + ": " + r.why })));
  const total = ex.executors.length + (ex.removedTotal || 0);
  const shown = bars.slice(0, MAX_BARS).sort((x, y) => x.from - y.from || (x.id < y.id ? -1 : 1));
  const stages = (s.stages || []).filter((st) => st.submittedMs >= 0);
  const jobs = s.jobs.filter((j) => j.submittedMs >= 0).slice(-MAX_JOB_MARKS);  // the newest
  let t0 = now;
  for (const b of shown) t0 = Math.min(t0, b.from);
  for (const st of stages) t0 = Math.min(t0, st.submittedMs);
  for (const j of jobs) t0 = Math.min(t0, j.submittedMs);
  const t1 = Math.max(now, t0 + 1000);
  const pct = (t) => (100 * (Math.min(Math.max(t, t0), t1) - t0) / (t1 - t0)).toFixed(3) + "%";
  const span = (from, to) => "left:" + pct(from) + ";width:calc(" + pct(to) + " - " + pct(from) + ")";
  const lanes = [];
  // Stages packed into a few lanes (each stage where the lane's last one ended before it).
  const ends = [];
  let stagesLeft = 0;
  const stageLanes = [];
  for (const st of stages) {
    const to = st.completedMs >= 0 ? st.completedMs : now;
    let lane = ends.findIndex((end) => end <= st.submittedMs);
    if (lane < 0 && ends.length < MAX_STAGE_LANES) { lane = ends.length; ends.push(0); stageLanes.push([]); }
    if (lane < 0) { stagesLeft++; continue; }
    ends[lane] = to;
    stageLanes[lane].push(el("div", { class: "sbar " + st.state, "data-stage": st.job + "/" + st.id,
        style: span(st.submittedMs, to),
        title: st.job + "/" + st.id + " " + st.state.toLowerCase() + ", " + st.succeeded + "/" + st.tasks + " tasks",
        text: st.id }));
  }
  stageLanes.forEach((marks, i) => lanes.push(el("div", { class: "lane" }, [
      el("span", { class: "lbl", text: i === 0 ? "stages" : "" }), el("div", { class: "track" }, marks)])));
  for (const b of shown) {
    lanes.push(el("div", { class: "lane" }, [
        el("span", { class: "lbl", text: b.id, title: b.title }),
        el("div", { class: "track" }, [el("div", { class: "ebar" + b.cls, "data-executor-id": b.id,
            "data-ended": b.to === null ? "false" : "true", style: span(b.from, b.to === null ? now : b.to),
            title: b.title })])]));
  }
  // Job starts (dashed) and ends (solid) over every lane, named in a lane of their own.
  const marks = [], names = [];
  for (const j of jobs) {
    marks.push(el("div", { class: "jmark start", "data-job": j.id, style: "left:" + pct(j.submittedMs) }));
    names.push(el("span", { class: "jname", style: "left:" + pct(j.submittedMs), text: "▸ " + j.id }));
    if (j.completedMs >= 0) {
      marks.push(el("div", { class: "jmark end", "data-job": j.id, style: "left:" + pct(j.completedMs) }));
      names.push(el("span", { class: "jname end", style: "left:" + pct(j.completedMs),
                              text: j.id + " " + j.state.toLowerCase() + " ◂" }));
    }
  }
  if (jobs.length > 0) {
    lanes.unshift(el("div", { class: "lane" }, [el("span", { class: "lbl", text: "jobs" }),
                                                el("div", { class: "track" }, names)]));
  }
  const overlay = el("div", { class: "track", style: "top:30px;bottom:0" }, marks);
  const axis = el("div", { class: "axis" }, [el("div", { class: "track" },
      [0, 0.25, 0.5, 0.75, 1].map((f) => el("span", { style: "left:" + (f * 100) + "%", text: fmtClock(t0 + f * (t1 - t0)) })))]);
  const notes = [];
  if (total > shown.length) notes.push((total - shown.length) + " more executors not shown");
  if (stagesLeft + (s.stagesOmitted || 0) > 0) notes.push((stagesLeft + (s.stagesOmitted || 0)) + " more stages not shown");
  if (shown.length === 0 && stageLanes.length === 0) lanes.push(el("div", { class: "empty", text: "no executors yet" }));
  box.replaceChildren(axis, ...lanes, overlay, ...(notes.length ? [el("div", { class: "more", text: notes.join("; ") })] : []));
  document.getElementById("timelineCount").textContent = shown.length + " of " + total + " executors";
}

// Each stage's tasks done / running / failed attempts of its total, as a bar: the running ones
// first, then the newest.
const MAX_STAGE_ROWS = 25;
function renderStages(s) {
  const all = (s.stages || []).slice().sort((x, y) =>
      (x.state === "RUNNING" ? 0 : 1) - (y.state === "RUNNING" ? 0 : 1) || y.submittedMs - x.submittedMs);
  const shown = all.slice(0, MAX_STAGE_ROWS);
  const rows = shown.map((st) => {
    const frac = (n) => st.tasks > 0 ? Math.min(1, n / st.tasks) : 0;
    const done = frac(st.succeeded), run = Math.min(frac(st.running), 1 - done);
    const fail = Math.min(frac(st.failedAttempts), 1 - done - run);
    const took = st.submittedMs < 0 ? "–" : fmtDur((st.completedMs >= 0 ? st.completedMs : s.uptimeMs) - st.submittedMs);
    return el("tr", { "data-stage": st.job + "/" + st.id }, [
      el("td", { text: st.job + " / " + st.id }),
      el("td", {}, [el("span", { class: "pill " + st.state, text: st.state.toLowerCase() })]),
      el("td", {}, [el("div", { class: "stagebar", title: st.succeeded + " done, " + st.running + " running, " + st.failedAttempts + " failed attempts of " + st.tasks }, [
          el("div", { class: "done", style: "width:" + (100 * done).toFixed(1) + "%" }),
          el("div", { class: "run", style: "width:" + (100 * run).toFixed(1) + "%" }),
          el("div", { class: "fail", style: "width:" + (100 * fail).toFixed(1) + "%" })])]),
      el("td", { class: "num", text: st.succeeded + " / " + st.running + " / " + st.failedAttempts + " / " + st.tasks }),
      el("td", { class: "num", text: took })]);
  });
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { colspan: "5", class: "empty", text: "no stages yet" })]));
  const more = all.length - shown.length + (s.stagesOmitted || 0);
  if (more > 0) rows.push(el("tr", {}, [el("td", { colspan: "5", class: "more", text: more + " more stages" })]));
  document.querySelector("#stages tbody").replaceChildren(...rows);
  document.getElementById("stageCount").textContent = (all.length + (s.stagesOmitted || 0)) + " stages";
}

// Gone executors and why, each with its logs (the AM still knows a gone executor's container).
const MAX_REMOVED_ROWS = 40;
function renderRemoved(ex) {
  const shown = removedOf(ex).slice(0, MAX_REMOVED_ROWS);
  const rows = shown.map((r) => el("tr", { "data-executor-id": r.id, "data-reason": r.reason }, [
    el("td", { text: r.id }), el("td", { text: r.host }),
    el("td", {}, [el("span", { class: "pill " + r.reason, text: reasonLabel(r.reason) })]),
    el("td", { class: "num", text: r.registeredAtMs >= 0 ? fmtDur(r.removedAtMs - r.registeredAtMs) : "–" }),
    el("td", { class: "num", text: fmtClock(r.removedAtMs) }),
    el("td", { class: "why" }, [el("div", { class: "clamp", title: r.why, text: r.why })]),
    el("td", { class: "logs", "data-logs-for": r.id }, [logLinks("api/v1/executors/" + encodeURIComponent(r.id))])]));
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { colspan: "7", class: "empty", text: "none removed yet" })]));
  const removedTotal = ex.removedTotal || 0;
  if (removedTotal > shown.length) {
    rows.push(el("tr", {}, [el("td", { colspan: "7", class: "more", text: (removedTotal - shown.length) + " more removed" })]));
  }
  document.querySelector("#removed tbody").replaceChildren(...rows);
  document.getElementById("removedCount").textContent = removedTotal + " in all";
}

function renderJobs(s) {
  const body = document.querySelector("#jobs tbody");
  const rows = s.jobs.map((j) => el("tr", {}, [
    el("td", { text: j.id }), el("td", { text: j.name }),
    el("td", {}, [el("span", { class: "pill " + j.state, text: j.state.toLowerCase() })]),
    el("td", {}, [el("div", { class: "bar" }, [el("div", { style: "width:" + (j.tasks ? 100 * j.succeeded / j.tasks : 0).toFixed(1) + "%" })])]),
    el("td", { class: "num", text: String(j.tasks) }), el("td", { class: "num", text: String(j.pending) }),
    el("td", { class: "num", text: String(j.running) }), el("td", { class: "num", text: String(j.succeeded) }),
    el("td", { class: "num", text: String(j.failedAttempts) })]));
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { colspan: "9", class: "empty", text: "no jobs yet" })]));
  body.replaceChildren(...rows);
}

function niceCeil(v) {
  if (v <= 5) return Math.max(1, Math.ceil(v));
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
function ticks(max, count) {
  const raw = max / count, p = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = p;
  for (const m of [1, 2, 2.5, 5, 10]) { if (m * p >= raw) { step = m * p; break; } }
  if (step < 1 && max >= 1 && Number.isInteger(max)) step = 1;
  const out = [];
  for (let v = 0; v <= max + 1e-9; v += step) out.push(Math.round(v * 1000) / 1000);
  return out;
}

function drawChart() {
  const canvas = document.getElementById("chart");
  const pts = view.points;
  document.getElementById("points").textContent = String(pts.length);
  canvas.dataset.points = String(pts.length);
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  if (pts.length === 0) {
    ctx.fillStyle = "#6b7280";
    ctx.fillText("waiting for the first allocation tick…", 20, 30);
    return;
  }
  const pad = { l: 40, r: 58, t: 10, b: 24 };
  const pw = w - pad.l - pad.r, ph = h - pad.t - pad.b;
  const t0 = pts[0].atMs;
  const t1 = Math.max(view.nowMs, pts[pts.length - 1].atMs, t0 + 5000);
  let dataMax = 1, taskMax = 1;
  for (const p of pts) {
    dataMax = Math.max(dataMax, p.target, p.live, p.busy, p.min);
    taskMax = Math.max(taskMax, p.pendingTasks);
  }
  // A max bound far above the data would squash it: then it is only named, not drawn.
  let scaleMax = dataMax;
  for (const p of pts) if (p.max < UNBOUNDED && p.max <= 2 * dataMax + 4) scaleMax = Math.max(scaleMax, p.max);
  const yMax = niceCeil(scaleMax * 1.08), tMax = niceCeil(taskMax * 1.05);
  const x = (t) => pad.l + ((t - t0) / (t1 - t0)) * pw;
  const y = (v) => pad.t + (1 - Math.min(v, yMax) / yMax) * ph;
  const yt = (v) => pad.t + (1 - v / tMax) * ph;

  // Grid and axes.
  ctx.strokeStyle = "#eef0f3"; ctx.fillStyle = "#6b7280"; ctx.lineWidth = 1;
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  for (const v of ticks(yMax, 5)) {
    ctx.beginPath(); ctx.moveTo(pad.l, Math.round(y(v)) + 0.5); ctx.lineTo(pad.l + pw, Math.round(y(v)) + 0.5); ctx.stroke();
    ctx.fillText(String(v), pad.l - 6, y(v));
  }
  ctx.textAlign = "left"; ctx.fillStyle = "#94a3b8";
  for (const v of ticks(tMax, 5)) ctx.fillText(v >= 10000 ? (v / 1000) + "k" : String(v), pad.l + pw + 6, yt(v));
  ctx.fillStyle = "#6b7280"; ctx.textAlign = "center"; ctx.textBaseline = "top";
  const span = t1 - t0;
  let step = 1000;
  for (const s of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400]) {
    step = s * 1000; if (span / step <= 8) break;
  }
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    ctx.fillText(fmtClock(t), x(t), pad.t + ph + 6);
    ctx.strokeStyle = "#f3f4f6"; ctx.beginPath(); ctx.moveTo(Math.round(x(t)) + 0.5, pad.t); ctx.lineTo(Math.round(x(t)) + 0.5, pad.t + ph); ctx.stroke();
  }
  ctx.strokeStyle = "#d1d5db";
  ctx.beginPath(); ctx.moveTo(pad.l + 0.5, pad.t); ctx.lineTo(pad.l + 0.5, pad.t + ph); ctx.lineTo(pad.l + pw, pad.t + ph + 0.5); ctx.stroke();

  // A value holds until the next point: step lines, carried on to now.
  const stepPath = (key, yf) => {
    ctx.beginPath();
    ctx.moveTo(x(pts[0].atMs), yf(pts[0][key]));
    for (let i = 1; i < pts.length; i++) {
      ctx.lineTo(x(pts[i].atMs), yf(pts[i - 1][key]));
      ctx.lineTo(x(pts[i].atMs), yf(pts[i][key]));
    }
    ctx.lineTo(x(t1), yf(pts[pts.length - 1][key]));
  };
  // Pending tasks: an area on the right axis, behind everything.
  stepPath("pendingTasks", yt);
  ctx.lineTo(x(t1), yt(0)); ctx.lineTo(x(pts[0].atMs), yt(0)); ctx.closePath();
  ctx.fillStyle = "rgba(148, 163, 184, 0.22)"; ctx.fill();
  stepPath("pendingTasks", yt); ctx.strokeStyle = "#94a3b8"; ctx.lineWidth = 1; ctx.stroke();

  // Bounds.
  const last = pts[pts.length - 1];
  ctx.setLineDash([5, 4]); ctx.strokeStyle = "#dc2626"; ctx.lineWidth = 1.25;
  stepPath("min", y); ctx.stroke();
  const maxDrawn = last.max < UNBOUNDED && last.max <= yMax;
  if (maxDrawn) { stepPath("max", y); ctx.stroke(); }
  ctx.setLineDash([]);
  ctx.fillStyle = "#dc2626"; ctx.textAlign = "right"; ctx.textBaseline = "bottom";
  ctx.fillText("max " + fmtMax(last.max) + (maxDrawn ? "" : " (off scale)"), pad.l + pw - 4, maxDrawn ? y(last.max) - 2 : pad.t + 12);
  // Below its line, unless that would run into the time axis.
  const minBelow = y(last.min) + 16 < pad.t + ph;
  ctx.textBaseline = minBelow ? "top" : "bottom";
  ctx.fillText("min " + last.min, pad.l + pw - 4, minBelow ? y(last.min) + 2 : y(last.min) - 2);

  // Live wide and pale underneath, busy dashed on top: when they are equal both still show.
  const series = [["live", "rgba(22, 163, 74, .45)", 5, []], ["target", "#2563eb", 2, []],
                  ["busy", "#ea580c", 2, [6, 3]]];
  for (const [key, color, width, dash] of series) {
    ctx.setLineDash(dash);
    stepPath(key, y); ctx.strokeStyle = color; ctx.lineWidth = width; ctx.lineJoin = "round"; ctx.stroke();
  }
  ctx.setLineDash([]);

  if (view.hover !== null) {
    const t = t0 + ((view.hover - pad.l) / pw) * (t1 - t0);
    let p = pts[0];
    for (const q of pts) { if (q.atMs <= t) p = q; else break; }
    ctx.strokeStyle = "rgba(17,24,39,.35)"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(Math.round(view.hover) + 0.5, pad.t); ctx.lineTo(Math.round(view.hover) + 0.5, pad.t + ph); ctx.stroke();
    document.getElementById("readout").textContent = "at " + fmtClock(t) + ": target " + p.target +
        " · live " + p.live + " · busy " + p.busy + " · pending tasks " + p.pendingTasks +
        " · bounds [" + p.min + ", " + fmtMax(p.max) + "]";
  }
}

let failures = 0;
async function refresh() {
  try {
    const since = view.lastAt >= 0 ? "?since=" + view.lastAt : "";
    const [status, history, executors, decisions] = await Promise.all([
      getJson("api/v1/status"), getJson("api/v1/allocation/history" + since),
      getJson("api/v1/executors"), getJson("api/v1/allocation/decisions?limit=40")]);
    view.status = status;
    view.ended = ENDED_STATES.includes(status.state);
    view.nowMs = history.nowMs;
    if (history.points.length > 0) {
      view.points.push(...history.points);
      if (view.points.length > MAX_POINTS) view.points.splice(0, view.points.length - MAX_POINTS);
      view.lastAt = view.points[view.points.length - 1].atMs;
    }
    renderCards(status);
    renderExecutors(executors);
    renderDecisions(decisions);
    renderCapacity(status);
    renderTimeline(status, executors);
    renderStages(status);
    renderRemoved(executors);
    renderJobs(status);
    drawChart();
    failures = 0;
    const conn = document.getElementById("conn");
    conn.className = "";
    conn.textContent = view.ended ? "ended · as its event log last recorded it"
                                  : "live · updated " + new Date().toLocaleTimeString();
  } catch (error) {
    failures++;
    const conn = document.getElementById("conn");
    conn.className = "down";
    conn.textContent = "not reachable (" + error.message + "); showing the last data";
  } finally {
    setTimeout(refresh, failures > 0 ? 3000 : 1000);
  }
}

document.getElementById("chart").addEventListener("mousemove", (event) => {
  view.hover = event.offsetX; drawChart();
});
document.getElementById("chart").addEventListener("mouseleave", () => {
  view.hover = null; document.getElementById("readout").textContent = ""; drawChart();
});
window.addEventListener("resize", drawChart);
document.getElementById("boundsForm").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target, body = {};
  for (const name of ["min", "initial", "max"]) {
    if (form.elements[name].value !== "") body[name] = Number(form.elements[name].value);
  }
  const msg = document.getElementById("boundsMsg");
  try {
    const response = await fetch("api/v1/allocation/bounds", {
      method: "PUT", headers: authHeaders({ "Content-Type": "application/json" }),
      body: JSON.stringify(body) });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error ? answer.error.message : "HTTP " + response.status);
    msg.className = ""; msg.textContent = "now [" + answer.min + ", " + fmtMax(answer.max) + "]";
    form.reset();
  } catch (error) {
    msg.className = "err"; msg.textContent = error.message;
  }
});
refresh();
refreshFailures();
)js";

}  // namespace

std::string_view statusPageHtml() {
  static const std::string page =
      rest::webPage("tide · application master", kStyle, kBody, kScript);
  return page;
}

}  // namespace tide::am
