// The review list: select every document of the page, and count what is selected.
// Without this file the boxes tick one by one and "All matching" still works.

const form = document.querySelector("form[data-bulk]");
const all = document.querySelector("[data-select-all]");
const counter = document.querySelector("[data-selected-count]");

function boxes() {
  return [...document.querySelectorAll('input[name="ids"][form="bulk-form"]')];
}

function recount() {
  const list = boxes();
  const ticked = list.filter((box) => box.checked).length;
  if (counter) counter.textContent = String(ticked);
  if (all) {
    all.checked = list.length > 0 && ticked === list.length;
    all.indeterminate = ticked > 0 && ticked < list.length;
  }
}

if (form) {
  all?.addEventListener("change", () => {
    for (const box of boxes()) box.checked = all.checked;
    recount();
  });
  document.addEventListener("change", (event) => {
    if (event.target instanceof HTMLInputElement && event.target.name === "ids") recount();
  });
  // Rows put in place or removed by the live list (app.js).
  document.addEventListener("documents:rows-changed", recount);
  recount();
}
