#include "deploy/rm/rm_page.h"

#include "rest/web_page.h"

namespace tide::rm {
namespace {

// Relative URLs, so it also works behind a path prefix. Elements the browser test reads:
// #totals, rows of #apps with data-app-id, rows of #nodes with data-node-id, #message.
constexpr std::string_view kStyle = R"css(:root {
  --ok: #16a34a; --bad: #dc2626; --wait: #ea580c; --link: #2563eb;
}
main { padding: 16px 24px; }
section h2 { margin-bottom: 8px; }
#message { padding: 10px 14px; border-radius: 6px; background: #fef2f2; color: #991b1b; }
#message:empty { display: none; }
#totals { display: flex; gap: 28px; flex-wrap: wrap; }
#totals div { display: flex; flex-direction: column; }
#totals b { font-size: 20px; font-variant-numeric: tabular-nums; }
#totals span { color: var(--muted); font-size: 12px; }
.state-RUNNING, .state-SUCCEEDED { color: var(--ok); }
.state-FAILED, .state-KILLED, .state-LOST { color: var(--bad); }
.state-ACCEPTED, .state-NEW, .state-SUBMITTED { color: var(--wait); }
a { color: var(--link); }
td { white-space: nowrap; }
td.why { white-space: normal; }
)css";

constexpr std::string_view kBody = R"html(<header>
  <h1>tide-rm</h1>
  <span class="meta" id="cluster"></span>
  <span id="conn">connecting…</span>
</header>
<main>
  <div id="message"></div>
  <section>
    <h2>Cluster</h2>
    <div id="totals"></div>
  </section>
  <section>
    <h2>Applications</h2>
    <table>
      <thead><tr><th>Id</th><th>Name</th><th>Queue</th><th>State</th><th>Final status</th>
        <th>Attempt</th><th>Started</th><th class="num">Containers</th>
        <th class="num">Memory</th><th class="num">Cores</th><th>Page</th><th>Diagnostics</th></tr></thead>
      <tbody id="apps"></tbody>
    </table>
  </section>
  <section>
    <h2>Nodes</h2>
    <table>
      <thead><tr><th>Node</th><th>State</th><th class="num">Containers</th>
        <th class="num">Memory used / capacity</th><th class="num">Cores used / capacity</th>
        <th>Last heartbeat</th></tr></thead>
      <tbody id="nodes"></tbody>
    </table>
  </section>
</main>
)html";

constexpr std::string_view kScript =
    R"js(// The client token comes once in this page's address (?token=$(tide token)).
const TOKEN = tokenFromAddress("tideRmToken");

function fmtTime(epochMs) {
  if (!epochMs) return "–";
  return new Date(epochMs).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}
function fmtMb(mb) { return mb >= 10240 ? (mb / 1024).toFixed(0) + " GiB" : mb + " MiB"; }
function ago(epochMs) {
  if (!epochMs) return "–";
  const s = Math.max(0, Math.round((Date.now() - epochMs) / 1000));
  return s + " s ago";
}
async function getJson(path) {
  const response = await fetch(path, { cache: "no-store", headers: bearerHeaders(TOKEN) });
  if (response.status === 401) {
    throw new Error("tide-rm needs a client token to show its state: open this page as " +
                    window.location.origin + window.location.pathname +
                    "?token=<the output of `tide token`>");
  }
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}
// YARN's lists: {"apps": {"app": [...]}} or {"apps": null} when there are none.
function listOf(json, outer, inner) {
  return (json[outer] && json[outer][inner]) || [];
}

function renderTotals(m, info) {
  const totals = document.getElementById("totals");
  const item = (value, label, id) => el("div", { id }, [el("b", { text: String(value) }), el("span", { text: label })]);
  totals.replaceChildren(
    item(m.activeNodes + (m.lostNodes ? " (+" + m.lostNodes + " lost)" : ""), "nodes", "total-nodes"),
    item(m.allocatedVirtualCores + " / " + m.totalVirtualCores, "cores used", "total-cores"),
    item(fmtMb(m.allocatedMB) + " / " + fmtMb(m.totalMB), "memory used", "total-memory"),
    item(m.containersAllocated, "containers", "total-containers"),
    item(m.appsRunning, "running", "apps-running"),
    item(m.appsPending, "waiting", "apps-pending"),
    item(m.appsCompleted + " / " + m.appsFailed + " / " + m.appsKilled, "finished / failed / killed", "apps-ended"));
  document.getElementById("cluster").textContent =
    "cluster " + info.id + " · up since " + fmtTime(info.startedOn);
}
function renderApps(apps) {
  const rows = apps.slice().reverse().map((a) => {
    const page = a.trackingUrl ? el("a", { href: a.trackingUrl, text: "status page" })
                               : el("span", { class: "empty", text: "–" });
    return el("tr", { "data-app-id": a.id }, [
      el("td", { text: a.id }), el("td", { text: a.name || "–" }), el("td", { text: a.queue || "–" }),
      el("td", { class: "state-" + a.state, text: a.state }),
      el("td", { class: "state-" + a.finalStatus, text: a.finalStatus }),
      el("td", { text: a.currentAppAttemptId || "–" }), el("td", { text: fmtTime(a.startedTime) }),
      el("td", { class: "num", text: String(a.runningContainers || 0) }),
      el("td", { class: "num", text: fmtMb(a.allocatedMB || 0) }),
      el("td", { class: "num", text: String(a.allocatedVCores || 0) }),
      el("td", {}, [page]), el("td", { class: "why", text: a.diagnostics || "" })]);
  });
  const body = document.getElementById("apps");
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { class: "empty", colspan: "12", text: "no applications yet" })]));
  body.replaceChildren(...rows);
}
function renderNodes(nodes) {
  const rows = nodes.map((n) => el("tr", { "data-node-id": n.id }, [
    el("td", { text: n.id }), el("td", { class: "state-" + n.state, text: n.state }),
    el("td", { class: "num", text: String(n.numContainers) }),
    el("td", { class: "num", text: fmtMb(n.usedMemoryMB) + " / " + fmtMb(n.usedMemoryMB + n.availMemoryMB) }),
    el("td", { class: "num", text: n.usedVirtualCores + " / " + (n.usedVirtualCores + n.availableVirtualCores) }),
    el("td", { text: ago(n.lastHealthUpdate) })]));
  const body = document.getElementById("nodes");
  if (rows.length === 0) rows.push(el("tr", {}, [el("td", { class: "empty", colspan: "6", text: "no node has registered" })]));
  body.replaceChildren(...rows);
}

async function refresh() {
  const conn = document.getElementById("conn");
  try {
    const [metrics, info, apps, nodes] = await Promise.all([
      getJson("ws/v1/cluster/metrics"), getJson("ws/v1/cluster/info"),
      getJson("ws/v1/cluster/apps"), getJson("ws/v1/cluster/nodes")]);
    renderTotals(metrics.clusterMetrics, info.clusterInfo);
    renderApps(listOf(apps, "apps", "app"));
    renderNodes(listOf(nodes, "nodes", "node"));
    document.getElementById("message").textContent = "";
    conn.textContent = "updated " + new Date().toLocaleTimeString();
    conn.className = "";
  } catch (e) {
    document.getElementById("message").textContent = e.message;
    conn.textContent = "not connected";
    conn.className = "down";
  }
}
refresh();
setInterval(refresh, 2000);
)js";

}  // namespace

std::string_view resourceManagerPageHtml() {
  static const std::string page = rest::webPage("tide · resource manager", kStyle, kBody, kScript);
  return page;
}

}  // namespace tide::rm
