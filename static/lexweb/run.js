// lexweb — the run page. The page works without this file: it shows the run's stored state
// (each stage's output, and the text a running stage has streamed so far) and a reload brings
// it up to date. With it, the page follows the run's own websocket
// (ws/cases/<case>/runs/<run>/events/?after=N): it starts after the last event the server
// rendered, appends each batch of tokens to its stage's text, and when a stage or the run
// changes status it asks the server for the run's state again (?part=1) and puts it in place.
// After a lost connection it reconnects with ?after=<the last number it saw>, so no batch is
// lost or shown twice.

import { serverHtml } from "./server_html.js";

const root = document.querySelector("[data-run-stream]");

function setupRun(page) {
  const state = document.getElementById("live-state");
  const announce = document.getElementById("run-announce");
  const say = (text) => { if (state) state.textContent = text; };
  let last = Number(page.dataset.after) || 0;
  let delay = 1000;
  let refreshTimer = null;
  let refreshing = false;
  let again = false;
  const rates = new Map(); // stage id -> attempt whose speed is shown

  // The stage that is running (aria-current="step" in the server's rendering) is brought into
  // view when it starts, unless the reader unticked "Follow the running stage".
  const followBox = document.getElementById("run-follow");
  if (followBox) followBox.closest("label").hidden = false;
  let followed = page.querySelector('#run-state [aria-current="step"]')?.dataset.stage || null;

  function followRunning() {
    const running = page.querySelector('#run-state [aria-current="step"]');
    const id = running ? running.dataset.stage : null;
    if (!running || id === followed) {
      followed = id;
      return;
    }
    followed = id;
    if (followBox && !followBox.checked) return;
    const details = running.querySelector("details.stage__output");
    if (details) details.open = true;
    running.scrollIntoView({ block: "start" });
  }

  function liveText(stageId) {
    return page.querySelector(`[data-live-stage="${Number(stageId)}"]`);
  }

  // The worker counts the backend's tokens as they stream and sends its rate with each batch.
  function showRate(stageId, attempt, perSecond) {
    const shown = rates.get(stageId);
    if (shown !== undefined && shown > attempt) return;
    const cell = page.querySelector(`[data-rate-for="${Number(stageId)}"]`);
    if (!cell || typeof perSecond !== "number" || !Number.isFinite(perSecond)) return;
    rates.set(stageId, attempt);
    cell.textContent = `${perSecond.toFixed(1)} tokens/s`;
  }

  function tokens(payload) {
    const el = liveText(payload.stage_id);
    if (!el || typeof payload.text !== "string" || !Number.isInteger(payload.offset)) {
      refreshSoon();
      return;
    }
    const attempt = Number(payload.attempt) || 0;
    const shown = Number(el.dataset.attempt) || 0;
    if (attempt < shown) return; // an earlier attempt's late batch
    let text = el.textContent;
    if (attempt > shown) {
      el.dataset.attempt = String(attempt);
      text = "";
    }
    if (payload.offset + payload.text.length <= text.length) return; // already shown
    if (payload.offset > text.length) refreshSoon(); // a hole: the server has the whole text
    const follow = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    el.textContent = text.slice(0, payload.offset) + payload.text;
    const details = el.closest("details");
    if (details) details.open = true;
    if (follow) el.scrollTop = el.scrollHeight;
    showRate(payload.stage_id, attempt, payload.tokens_per_second);
  }

  // The server renders the run's state; the text streamed here is kept where it is longer.
  async function refresh() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = true;
    try {
      const holder = await serverHtml(page.dataset.partUrl);
      if (!holder) return;
      const fresh = holder.querySelector("#run-state");
      const current = document.getElementById("run-state");
      if (!fresh || !current) return;
      for (const el of fresh.querySelectorAll("[data-live-stage]")) {
        const old = liveText(el.dataset.liveStage);
        const same = old && old.dataset.attempt === el.dataset.attempt;
        if (same && old.textContent.length > el.textContent.length) el.textContent = old.textContent;
        const oldDetails = old && old.closest("details");
        const details = el.closest("details");
        if (oldDetails && details && oldDetails.open) details.open = true;
      }
      for (const cell of fresh.querySelectorAll("[data-rate-for]")) {
        const old = page.querySelector(`[data-rate-for="${cell.dataset.rateFor}"]`);
        if (old && rates.has(Number(cell.dataset.rateFor))) cell.textContent = old.textContent;
      }
      current.replaceWith(fresh);
      const status = fresh.querySelector("#run-status");
      if (announce && status) announce.textContent = `Run ${status.textContent.trim()}`;
      followRunning();
    } catch {
      // The next event, or a reload, brings the page up to date.
    } finally {
      refreshing = false;
      if (again) {
        again = false;
        refreshSoon();
      }
    }
  }

  function refreshSoon() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      refresh();
    }, 200);
  }

  function handle(event) {
    if (!event || !Number.isInteger(event.seq) || event.seq <= last) return;
    last = event.seq;
    if (event.kind === "stage.tokens") tokens(event.payload || {});
    else refreshSoon();
  }

  function open() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(`${scheme}${location.host}${page.dataset.runStream}?after=${last}`);
    socket.addEventListener("open", () => {
      delay = 1000;
      say("live");
    });
    socket.addEventListener("message", (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      handle(data);
    });
    socket.addEventListener("close", (event) => {
      if (event.code === 4404 || event.code === 4400) {
        say("not available");
        return;
      }
      if (event.code === 4403) {
        say("your access to this case was removed");
        setTimeout(() => location.reload(), 2000);
        return;
      }
      say("reconnecting…");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    });
  }

  open();
}

if (root) setupRun(root);
