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
