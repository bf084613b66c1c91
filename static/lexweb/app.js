// lexweb — small progressive enhancements. Every page works without this file.

// (a) Ask before destructive submits: <button data-confirm="…"> or <form data-confirm="…">.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const button = event.submitter;
  const question = (button && button.dataset.confirm) || form.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// (a2) <form data-submit-in-place="…">: post without leaving the page, so the live stream stays
// connected and hears the answer. Without JS the form posts and redirects as usual.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (event.defaultPrevented || !form.dataset.submitInPlace) return;
  event.preventDefault();
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    if (!response.ok) throw new Error(String(response.status));
    toast("info", form.dataset.submitInPlace);
  } catch {
    toast("warning", "That did not go through; reload the page and try again.");
  }
});

// (b) <button data-copy="#selector"> copies the target's text.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const target = document.querySelector(button.dataset.copy);
  if (!target) return;
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  try {
    await navigator.clipboard.writeText(target.textContent.trim());
    button.textContent = "Copied";
  } catch {
    // No clipboard access (insecure context, denied): select the text so Ctrl+C works.
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = "Press Ctrl+C to copy";
  }
  setTimeout(() => { button.textContent = label; }, 3000);
});

// (c) A case page's live stream: toasts for notices, reconnect with backoff.
const TOAST_MS = 12000;
const LEVELS = new Set(["info", "success", "warning"]);

function toast(level, text) {
  const region = document.getElementById("live-notices");
  if (!region) return;
  const div = document.createElement("div");
  div.className = `toast toast-${LEVELS.has(level) ? level : "info"}`;
  div.textContent = text;
  region.append(div);
  setTimeout(() => div.remove(), TOAST_MS);
}

function connectCaseStream(root) {
  const path = root.dataset.caseStream;
  const state = document.getElementById("live-state");
  const say = (text) => { if (state) state.textContent = text; };
  let delay = 1000;

  function open() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + path);

    socket.addEventListener("open", () => {
      delay = 1000;
      say("live");
    });

    socket.addEventListener("message", (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      if (data && data.type === "cases.notice" && typeof data.message === "string") {
        toast(data.level, data.message);
      }
    });

    socket.addEventListener("close", (event) => {
      if (event.code === 4404) {
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

const streamRoot = document.querySelector("[data-case-stream]");
if (streamRoot) connectCaseStream(streamRoot);
