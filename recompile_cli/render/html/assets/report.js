// The script of recompile-cli's HTML page (render/html.py); the page is complete without it.
// Click a column header to sort its own table by that column: largest first, then (click
// again) smallest first. Numbers compare as numbers ("x3", "0.041"), the rest as text.
const sortKey = text => {
  const match = /^x?(-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)$/i.exec(text.trim());
  return match ? [0, parseFloat(match[1])] : [text.trim() === "" ? 2 : 1, text.trim()];
};
const compareKeys = (a, b) => (a[0] === 0 ? a[1] - b[1] : a[1].localeCompare(b[1]));
document.querySelectorAll("table.sortable").forEach(table => {
  const headers = Array.from(table.tHead ? table.tHead.rows[0].cells : []);
  headers.forEach(th => {
    th.addEventListener("click", () => {
      const column = th.cellIndex;
      const order = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
      headers.forEach(other => other.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", order);
      const body = table.tBodies[0];
      const rows = Array.from(body.rows, (row, index) => ({row, index,
        key: sortKey(row.cells[column] ? row.cells[column].textContent : "")}));
      rows.sort((a, b) => {
        if (a.key[0] !== b.key[0]) return a.key[0] - b.key[0];  // numbers, text, then empty
        const c = compareKeys(a.key, b.key);
        return (order === "descending" ? -c : c) || a.index - b.index;
      });
      rows.forEach(({row}) => body.appendChild(row));
    });
  });
});
document.body.dataset.ready = "true";
