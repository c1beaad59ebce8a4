// Depot's pages work without this script; it adds copy buttons and asks
// before destructive buttons (no inline handlers: the pages' policy
// allows scripts from this file only).
document.addEventListener("click", async (ev) => {
  const copy = ev.target.closest("button[data-copy]");
  if (copy) {
    try {
      await navigator.clipboard.writeText(copy.dataset.copy);
      const was = copy.textContent;
      copy.textContent = "Copied";
      setTimeout(() => { copy.textContent = was; }, 1500);
    } catch {
      copy.textContent = "Select and copy";
    }
    return;
  }
  const confirmed = ev.target.closest("button[data-confirm]");
  if (confirmed && !window.confirm(confirmed.dataset.confirm)) {
    ev.preventDefault();
  }
});

// The event log's live rows: long-polls the URL the table names and puts
// what comes on top (text only: no markup from the server is parsed).
const live = document.querySelector("table[data-live]");
if (live) {
  let url = new URL(live.dataset.live, location.href);
  const status = document.getElementById("live-status");
  const body = live.tBodies[0];
  const poll = async () => {
    try {
      const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!r.ok) throw new Error("HTTP " + r.status);
      const page = await r.json();
      for (const e of page.events) {
        const tr = document.createElement("tr");
        tr.dataset.cursor = e.cursor;
        tr.className = "new";
        const cell = (text, time) => {
          const td = document.createElement("td");
          if (time) {
            const t = document.createElement("time");
            t.dateTime = time;
            t.textContent = text;
            td.append(t);
          } else {
            td.textContent = text;
          }
          tr.append(td);
        };
        cell(e.when, e.time);
        cell(e.event);
        cell(e.repository);
        cell(e.subject);
        cell(e.actor);
        body.prepend(tr);
        document.getElementById("no-events")?.remove();
      }
      url.searchParams.set("since", page.next_cursor);
      if (status) status.textContent = "New events appear at the top as they happen.";
      setTimeout(poll, 0);
    } catch (err) {
      if (status) status.textContent = "Live updates paused (" + err.message + "); retrying.";
      setTimeout(poll, 5000);
    }
  };
  poll();
}

// The quick search box's suggestions: as one types, the completions the
// page's URL answers fill the box's list (text only).
const box = document.querySelector("input[data-suggest]");
if (box && box.list) {
  let timer, asked = "";
  box.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const q = box.value.trim();
      if (q === "" || q === asked) return;
      asked = q;
      try {
        const url = new URL(box.dataset.suggest, location.href);
        url.searchParams.set("q", q);
        const r = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (!r.ok) return;
        const answer = await r.json();
        box.list.replaceChildren(...answer.suggestions.map((s) => {
          const o = document.createElement("option");
          o.value = s.text;
          o.label = s.type === "package" ? "package" : "keyword or word";
          return o;
        }));
      } catch {
        // Suggestions are a help; the form works without them.
      }
    }, 150);
  });
}
