// lexweb — a part of a page as the server renders it. Live pages ask the server to draw what
// changed (?part=1, ?panel=1, the review list's rows) rather than drawing it here, so there is
// one way to show each thing.

// The rendered HTML at `url`, in a detached element to pick parts from; null for an answer that
// is not 200-299 (the caller keeps what it shows). Fetch errors are the caller's.
export async function serverHtml(url) {
  const response = await fetch(url, {
    credentials: "same-origin",
    headers: { Accept: "text/html" },
  });
  if (!response.ok) return null;
  const holder = document.createElement("div");
  holder.innerHTML = await response.text(); // our own template's output, escaped by Django
  return holder;
}
