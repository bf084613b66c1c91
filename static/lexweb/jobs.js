// lexweb — the job queues page (/cluster/jobs/). The page works without this file (reload for
// fresh figures). With it, the page listens on the cluster socket (/ws/cluster/), where a worker
// says, at most once a second, that the queues changed (apps/operations/jobs_pulse.py): the page
// then reads its figures again (?part=1, the server's own rendering) and puts them in place. It
// reads them on every (re)connect too, since what changed while no socket listened is unknown.
// Heartbeat ages count up in place, and a worker past the stalled limit shows as silent.

import { ageText } from "./cluster.js";
import { serverHtml } from "./server_html.js";

const READ_AGAIN_MS = 300;
const TICK_MS = 1000;

function setupJobs(root) {
  const state = document.getElementById("live-state");
  const say = (text) => { if (state) state.textContent = text; };
  let delay = 1000;
  let timer = null;
  let reading = false;
  let again = false;

  async function readAgain() {
    timer = null;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      const holder = await serverHtml(root.dataset.jobsPart);
      if (!holder) return;
      const fresh = holder.querySelector("#jobs-live");
      const current = document.getElementById("jobs-live");
      if (fresh && current) current.replaceWith(fresh);
      tick();
    } catch {
      // The next change, or a reload, brings the figures up to date.
    } finally {
      reading = false;
      if (again) {
        again = false;
        readSoon();
      }
    }
  }

  function readSoon() {
    if (!timer) timer = setTimeout(readAgain, READ_AGAIN_MS);
  }

  function tick() {
    const live = document.getElementById("jobs-live");
    if (!live) return;
    const stalled = Number(live.dataset.stalledSeconds) || 0;
    for (const time of live.querySelectorAll("time[data-heartbeat]")) {
      const row = time.closest("tr");
      const at = Date.parse(time.getAttribute("datetime"));
      if (!row || !Number.isFinite(at)) continue;
      const seconds = Math.max(0, (Date.now() - at) / 1000);
      const age = row.querySelector("[data-heartbeat-age]");
      if (age) age.textContent = `(${ageText(seconds)} ago)`;
      const cell = row.querySelector("[data-worker-state]");
      if (cell && stalled && seconds > stalled && !cell.dataset.silent) {
        cell.dataset.silent = "";
        cell.innerHTML = '<span class="badge cluster-health-down">silent</span>';
      }
    }
  }

  function open() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(`${scheme}${location.host}${root.dataset.jobsStream}`);
    socket.addEventListener("open", () => {
      delay = 1000;
      say("live");
      readSoon();
    });
    socket.addEventListener("message", (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      if (data && data.type === "operations.jobs_changed") readSoon();
    });
    socket.addEventListener("close", (event) => {
      if (event.code === 4401) {
        say("signed out");
        return;
      }
      say("reconnecting…");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    });
  }

  setInterval(tick, TICK_MS);
  open();
}

const root = document.querySelector("[data-jobs-stream]");
if (root) setupJobs(root);
