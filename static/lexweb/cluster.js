// lexweb — the cluster dashboard's live stream. The page works without this file (reload to
// see new figures); with it, cells follow /ws/cluster/ events in place.
//
// The rows in the database are the truth and events are lost while the socket is down, so
// whenever the socket (re)opens the page fetches itself and swaps in the fresh #cluster-live,
// then follows events again. Events that arrive during that fetch are replayed on it.

const GIB = 1024 ** 3;
// An event about something the page does not show refetches the page at most this often.
const UNKNOWN_REFRESH_MS = 30000;
// A deployment's speed line is drawn by the server: a new call refetches the page this late.
const SPEED_REFRESH_MS = 10000;
// Sparklines (templates/cluster/_sparkline.html, apps.cluster.selectors.Sparkline).
const SPARK_WINDOW_S = 3600;
const SPARK_WIDTH = 120;
const SPARK_HEIGHT = 28;
const SPARK_BUCKET_S = 60;
const TICK_MS = 1000;

// "12 s", "3 min 20 s", "2 h 5 min", "3 days": as apps.cluster.selectors.age_text says it.
export function ageText(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  if (whole < 60) return `${whole} s`;
  if (whole < 3600) {
    const rest = whole % 60;
    return rest ? `${Math.floor(whole / 60)} min ${rest} s` : `${Math.floor(whole / 60)} min`;
  }
  if (whole < 2 * 86400) {
    const minutes = Math.floor((whole % 3600) / 60);
    const hours = Math.floor(whole / 3600);
    return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
  }
  return `${Math.floor(whole / 86400)} days`;
}

function sparkParse(svg) {
  const points = [];
  for (const pair of (svg.dataset.points || "").split(" ")) {
    const [at, value] = pair.split(":").map(Number);
    if (Number.isFinite(at) && Number.isFinite(value)) points.push([at, value]);
  }
  return points;
}

// Redraw a sparkline ending at `end` (unix seconds) from its data-points.
function sparkDraw(svg, end) {
  const top = Number(svg.dataset.top) || 100;
  const start = end - SPARK_WINDOW_S;
  const kept = sparkParse(svg).filter(([at]) => at >= start);
  svg.dataset.points = kept.map(([at, value]) => `${Math.round(at)}:${value.toFixed(1)}`).join(" ");
  const xy = ([at, value]) => {
    const x = Math.min(SPARK_WIDTH, Math.max(0, ((at - start) / SPARK_WINDOW_S) * SPARK_WIDTH));
    const y = SPARK_HEIGHT - (Math.min(Math.max(value, 0), top) / top) * SPARK_HEIGHT;
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  };
  const line = svg.querySelector("polyline");
  if (line) line.setAttribute("points", kept.map(xy).join(" "));
  // The newest point as a dot: one point alone draws no line.
  const dot = svg.querySelector("circle");
  if (dot && kept.length) {
    const [x, y] = xy(kept[kept.length - 1]).split(",");
    dot.setAttribute("cx", x);
    dot.setAttribute("cy", y);
  }
  svg.dataset.end = String(Math.round(end));
}

// Fold one sample into a line of 60 s buckets: the bucket's mean (utilisation) or peak (memory),
// as the server's history keeps them.
function sparkAdd(svg, at, value, peak) {
  const points = sparkParse(svg);
  const bucket = Math.floor(at / SPARK_BUCKET_S) * SPARK_BUCKET_S + SPARK_BUCKET_S / 2;
  const last = points[points.length - 1];
  if (last && Math.abs(last[0] - bucket) < 1) {
    const seen = Number(svg.dataset.bucketSamples || 1);
    last[1] = peak ? Math.max(last[1], value) : (last[1] * seen + value) / (seen + 1);
    svg.dataset.bucketSamples = String(seen + 1);
  } else if (!last || bucket > last[0]) {
    points.push([bucket, value]);
    svg.dataset.bucketSamples = "1";
  }
  svg.dataset.points = points.map(([t, v]) => `${Math.round(t)}:${v.toFixed(1)}`).join(" ");
}

function start(root) {
  const labelsNode = document.getElementById("cluster-labels");
  const labels = labelsNode ? JSON.parse(labelsNode.textContent) : {};
  const usable = Number(root.dataset.usableSpeed) || 40;
  // A host's report older than this is not believed (apps.cluster.selectors.host_is_stale).
  const staleAfter = Number(root.dataset.staleAfter) || 15;
  // Per host id: when (performance.now(), ms) it last reported, by the page or an event.
  const reportedAt = new Map();
  let staleCheckAt = 0;
  let connected = false; // the socket is open: a refresh now is followed by events
  let speedRefresh = null;
  const state = document.getElementById("live-state");
  const say = (text) => { if (state) state.textContent = text; };
  const clock = new Intl.DateTimeFormat("en-GB", {
    timeZone: root.dataset.timeZone || undefined,
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
  });
  let refreshing = null; // events held back while a refresh is in flight
  let refreshAgain = false;
  let unknownRefreshAt = 0;

  const live = () => document.getElementById("cluster-live");
  const field = (node, name) => node.querySelector(`[data-field="${name}"]`);
  const gib = (bytes) => (bytes / GIB).toFixed(1);
  const isCount = (value) => Number.isFinite(value) && value >= 0;
  const stateClass = (value) => String(value).replace(/[^a-z_]/g, "");

  function setTime(node, iso) {
    if (!node || typeof iso !== "string") return;
    const when = new Date(iso);
    if (Number.isNaN(when.getTime())) return;
    node.setAttribute("datetime", iso);
    node.textContent = clock.format(when);
  }

  function boardMemory(boardId) {
    let used = 0;
    let total = 0;
    let measured = false;
    for (const row of live().querySelectorAll(`tr[data-gpu-id][data-board-id="${boardId}"]`)) {
      if (!row.dataset.memoryTotal) continue;
      measured = true;
      used += Number(row.dataset.memoryUsed);
      total += Number(row.dataset.memoryTotal);
    }
    return measured ? `${gib(used)} of ${gib(total)} GiB` : "not measured";
  }

  function gpuSample(event) {
    const row = live().querySelector(`tr[data-gpu-id="${Number(event.gpu_id)}"]`);
    if (!row) return false;
    // null: the card has no such sensor (NVML: not supported).
    if (isCount(event.utilisation_pct) || event.utilisation_pct === null) {
      const known = event.utilisation_pct !== null;
      field(row, "utilisation").textContent = known ? `${event.utilisation_pct} %` : "n/a";
      const meter = row.querySelector("meter");
      if (meter) meter.value = known ? event.utilisation_pct : 0;
    }
    if (isCount(event.memory_used_bytes) && isCount(event.memory_total_bytes)) {
      row.dataset.memoryUsed = String(event.memory_used_bytes);
      row.dataset.memoryTotal = String(event.memory_total_bytes);
      field(row, "memory").textContent =
        `${gib(event.memory_used_bytes)} of ${gib(event.memory_total_bytes)} GiB`;
    }
    if (isCount(event.temperature_c)) field(row, "temperature").textContent = `${event.temperature_c} °C`;
    else if (event.temperature_c === null) field(row, "temperature").textContent = "n/a";
    if (isCount(event.power_w)) field(row, "power").textContent = `${Math.round(event.power_w)} W`;
    else if (event.power_w === null) field(row, "power").textContent = "n/a";
    setTime(field(row, "sampled"), event.sampled_at);
    const article = row.closest("[data-host-id]");
    if (article) hostReported(article, event.sampled_at);
    const at = Date.parse(event.sampled_at) / 1000;
    if (Number.isFinite(at)) {
      const util = row.querySelector('svg[data-spark="utilisation"]');
      if (util && isCount(event.utilisation_pct)) sparkAdd(util, at, event.utilisation_pct, false);
      const memory = row.querySelector('svg[data-spark="memory"]');
      if (memory && isCount(event.memory_used_bytes) && event.memory_total_bytes > 0) {
        sparkAdd(memory, at, (100 * event.memory_used_bytes) / event.memory_total_bytes, true);
      }
      for (const svg of row.querySelectorAll("svg[data-spark]")) sparkDraw(svg, Date.now() / 1000);
    }
    const boardId = row.dataset.boardId;
    if (boardId) {
      const text = boardMemory(boardId);
      const selector = `.cluster-board[data-board-id="${boardId}"] [data-field="board-memory"], `
        + `tr[data-deployment-id][data-board-id="${boardId}"] [data-field="board-memory"]`;
      for (const cell of live().querySelectorAll(selector)) cell.textContent = text;
    }
    return true;
  }

  function agentText(status, host, message) {
    const why = message || "no reason given";
    if (status === "no_nvml") return `No NVML on ${host}: ${why} (retrying)`;
    if (status === "error") return `GPU agent error on ${host}: ${why}`;
    if (status === "ok") return `The GPU agent on ${host} reads NVML${message ? `: ${message}` : ""}`;
    return `The GPU agent on ${host} has not reported yet.`;
  }

  function agentStatus(event) {
    const article = live().querySelector(`[data-host-id="${Number(event.host_id)}"]`);
    if (!article || typeof event.status !== "string") return false;
    article.dataset.agentStatus = event.status;
    article.dataset.agentMessage = typeof event.message === "string" ? event.message : "";
    hostReported(article, event.at);
    return true;
  }

  // The host's agent reported just now: show its own state again (it may have been stale).
  function hostReported(article, iso) {
    reportedAt.set(article.dataset.hostId, performance.now());
    article.dataset.stale = "false";
    showAgent(article);
    field(article, "agent-seen-wrap").hidden = false;
    setTime(field(article, "agent-seen"), iso);
  }

  function showAgent(article) {
    const status = article.dataset.agentStatus || "unknown";
    const badge = field(article, "agent-status");
    badge.className = `badge cluster-agent-${stateClass(status)}`;
    badge.textContent = (labels.agent && labels.agent[status]) || status;
    field(article, "agent-text").textContent =
      agentText(status, article.dataset.hostName, article.dataset.agentMessage || "");
  }

  function showStale(article, age) {
    const status = article.dataset.agentStatus || "unknown";
    const was = (labels.agent && labels.agent[status]) || status;
    const message = article.dataset.agentMessage;
    const badge = field(article, "agent-status");
    badge.className = "badge cluster-agent-stale";
    badge.textContent = "Stale";
    field(article, "agent-text").textContent =
      `Stale, last report ${ageText(age)} ago (was: ${was}${message ? `: ${message}` : ""})`;
  }

  // The page's hosts, as rendered: when each last reported, by the server's clock.
  function seedReports() {
    const now = performance.now();
    for (const article of live().querySelectorAll("article[data-host-id]")) {
      const age = Number(article.dataset.reportAge);
      if (article.dataset.reportAge !== undefined && Number.isFinite(age)) {
        reportedAt.set(article.dataset.hostId, now - age * 1000);
      } else {
        reportedAt.delete(article.dataset.hostId);
      }
    }
  }

  // Every second: ages of stale hosts go on; a host silent for longer than the server allows
  // is asked about (the page is fetched again; its selector decides, since an agent that
  // keeps reporting the same state publishes no event). Sparklines move with the clock.
  function tick() {
    const now = performance.now();
    let ask = false;
    for (const article of live().querySelectorAll("article[data-host-id]")) {
      const at = reportedAt.get(article.dataset.hostId);
      if (at === undefined) continue;
      const age = (now - at) / 1000;
      if (article.dataset.stale === "true") showStale(article, age);
      else if (age > staleAfter) ask = true;
    }
    // Only while connected: with the socket down the page waits for it to reopen, which
    // fetches the page anyway.
    if (ask && connected && now - staleCheckAt > staleAfter * 1000) {
      staleCheckAt = now;
      refresh();
    }
    if (Math.floor(now / TICK_MS) % 10 === 0) {
      for (const svg of live().querySelectorAll('svg[data-spark="utilisation"], svg[data-spark="memory"]')) {
        sparkDraw(svg, Date.now() / 1000);
      }
    }
  }

  function backendHealth(event) {
    const row = live().querySelector(`tr[data-backend-id="${Number(event.backend_id)}"]`);
    if (!row || typeof event.state !== "string") return false;
    const badge = field(row, "state");
    badge.className = `badge cluster-health-${stateClass(event.state)}`;
    badge.textContent = (labels.health && labels.health[event.state]) || event.state;
    const message = field(row, "message");
    message.textContent = typeof event.message === "string" ? event.message : "";
    message.hidden = !message.textContent;
    if (isCount(event.slots_busy) && isCount(event.slots_total)) {
      const total = event.slots_total || Number(row.dataset.slots);
      field(row, "slots").textContent = `${event.slots_busy} of ${total}`;
    }
    setTime(field(row, "checked"), event.checked_at);
    return true;
  }

  function deploymentSpeed(event) {
    const row = live().querySelector(`tr[data-deployment-id="${Number(event.deployment_id)}"]`);
    if (!row) return false;
    const speed = event.decode_tokens_per_second;
    const known = Number.isFinite(speed);
    field(row, "speed").textContent = known ? `${speed.toFixed(1)} tok/s` : "—";
    const mark = field(row, "speed-mark");
    // The server's verdict when it gives one; the same 40 tok/s line otherwise.
    const ok = typeof event.usable === "boolean" ? event.usable : known && speed >= usable;
    const kind = !known ? "none" : ok ? "usable" : "slow";
    mark.className = `badge cluster-speed-${kind}`;
    mark.textContent = { none: "no calls yet", usable: "usable", slow: "slow" }[kind];
    if (isCount(event.calls)) field(row, "calls").textContent = String(event.calls);
    // The per-call line comes from the server: fetch it a little later (calls come in bursts).
    if (!speedRefresh) {
      speedRefresh = setTimeout(() => {
        speedRefresh = null;
        if (connected) refresh();
      }, SPEED_REFRESH_MS);
    }
    return true;
  }

  const HANDLERS = {
    "cluster.gpu_sample": gpuSample,
    "cluster.agent_status": agentStatus,
    "cluster.backend_health": backendHealth,
    "cluster.deployment_speed": deploymentSpeed,
  };

  function apply(event) {
    const handler = HANDLERS[event.type];
    if (!handler) return;
    try {
      // Something the page does not show yet (a GPU, backend or model added since it was
      // rendered): fetch the page again, which shows it.
      if (!handler(event) && Date.now() - unknownRefreshAt > UNKNOWN_REFRESH_MS) {
        unknownRefreshAt = Date.now();
        refresh();
      }
    } catch (error) {
      console.error(error);
    }
  }

  async function refresh() {
    if (refreshing) {
      refreshAgain = true;
      return;
    }
    refreshing = [];
    try {
      const response = await fetch(location.pathname, {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
        cache: "no-store",
      });
      // Signed out meanwhile: the fetch followed the redirect to the sign-in page.
      if (response.redirected || !response.ok) {
        if (response.redirected) say("signed out: reload the page to sign in");
        return;
      }
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("cluster-live");
      if (fresh) {
        live().replaceWith(document.adoptNode(fresh));
        seedReports();
        for (const article of live().querySelectorAll('article[data-stale="true"]')) {
          const at = reportedAt.get(article.dataset.hostId);
          if (at !== undefined) showStale(article, (performance.now() - at) / 1000);
        }
      }
    } catch {
      // The cells keep what they show; the next event or reconnect brings them up to date.
    } finally {
      const held = refreshing;
      refreshing = null;
      for (const event of held) apply(event);
      if (refreshAgain) {
        refreshAgain = false;
        refresh();
      }
    }
  }

  let delay = 1000;

  function open() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(`${scheme}${location.host}${root.dataset.clusterStream}`);

    socket.addEventListener("open", () => {
      connected = true;
      delay = 1000;
      say("live");
      // Also on the first open: an agent's state is published only when it changes, and one
      // sent between the server rendering this page and the socket opening would be missed
      // until the next reload.
      refresh();
    });

    socket.addEventListener("message", (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      if (!event || typeof event.type !== "string") return;
      if (refreshing) refreshing.push(event);
      else apply(event);
    });

    socket.addEventListener("close", (event) => {
      connected = false;
      if (event.code === 4401) {
        say("signed out: reload the page to sign in");
        return;
      }
      say("reconnecting…");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    });
  }

  seedReports();
  setInterval(tick, TICK_MS);
  open();
}

const streamRoot = document.querySelector("[data-cluster-stream]");
if (streamRoot) start(streamRoot);
