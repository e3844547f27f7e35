// Sortable tables: a click on a column's header sorts the rows by it, again to reverse. Every table with a
// <thead> in <main> (not one marked data-nosort). Numbers sort as numbers, with their unit's prefix
// (900 Mb/s before 2 Gb/s); words naturally (cn2 before cn10), after numbers; blanks last; a second click
// reverses all of it; equal rows keep their order.
// A cell's data-sort, when set, is what it sorts by. Live refresh (live.js) redraws sections: the sort
// chosen is applied again to the fresh rows.
(function () {
  "use strict";
  var SCALE = { k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  var RANKS = { critical: 0, warning: 1, info: 2 };  // severities, worst first (not alphabetical)
  var NUMBER = /^([-+]?\d[\d,]*(?:\.\d+)?)\s*(?:([kMGT])(?=[A-Za-z\/]))?(?=[\sA-Za-z\/%]|$)/;
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  var chosen = {};  // table key -> {column, descending}

  function sortKey(cell) {
    if (!cell) return { n: null, s: "" };
    var given = cell.getAttribute("data-sort");
    var text = (given !== null ? given : cell.textContent).replace(/\s+/g, " ").trim();
    if (Object.prototype.hasOwnProperty.call(RANKS, text.toLowerCase())) return { n: RANKS[text.toLowerCase()], s: text };
    var m = /^0x/i.test(text) ? null : NUMBER.exec(text);  // a GUID is a word
    if (m) return { n: parseFloat(m[1].replace(/,/g, "")) * (m[2] ? SCALE[m[2]] : 1), s: text };
    return { n: null, s: text };
  }

  function compare(a, b) {
    if (a.n !== null && b.n !== null) return a.n - b.n;
    if (a.n !== null || b.n !== null) return a.n !== null ? -1 : 1;  // numbers before words
    if (!a.s || !b.s) return a.s ? -1 : b.s ? 1 : 0;  // blanks last
    return collator.compare(a.s, b.s);
  }

  function cellAt(row, column) {  // the cell covering `column`, colspans counted
    var at = 0;
    for (var i = 0; i < row.cells.length; i++) {
      at += row.cells[i].colSpan || 1;
      if (at > column) return row.cells[i];
    }
    return null;
  }

  function columnOf(th) {
    var at = 0, cells = th.parentNode.cells;
    for (var i = 0; i < cells.length && cells[i] !== th; i++) at += cells[i].colSpan || 1;
    return at;
  }

  function apply(table, column, descending) {
    Array.prototype.forEach.call(table.tBodies, function (body) {
      var rows = Array.prototype.slice.call(body.rows);
      var width = table.tHead.rows[0].cells.length;
      if (rows.length < 2 || rows.some(function (r) { return r.cells.length === 1 && width > 1; })) return;  // "None."
      var keyed = rows.map(function (row, i) { return { row: row, key: sortKey(cellAt(row, column)), i: i }; });
      keyed.sort(function (a, b) { return (descending ? -compare(a.key, b.key) : compare(a.key, b.key)) || a.i - b.i; });
      keyed.forEach(function (k) { body.appendChild(k.row); });
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      if (columnOf(th) === column) th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    });
  }

  function tableKey(table) {
    var holder = table.parentNode.closest("[id]") || document.body;
    var all = holder.querySelectorAll("table");
    return (holder.id || "page") + ":" + Array.prototype.indexOf.call(all, table);
  }

  function enhance(table) {
    if (table.dataset.sortable === "1" || !table.tHead || !table.tHead.rows.length || table.hasAttribute("data-nosort")) return;
    table.dataset.sortable = "1";
    var key = tableKey(table);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      if (!th.textContent.trim() || th.querySelector("button, a, input")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort-h";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        var column = columnOf(th);
        var was = chosen[key];
        var descending = !!(was && was.column === column && !was.descending);
        chosen[key] = { column: column, descending: descending };
        apply(table, column, descending);
      });
    });
    var was = chosen[key];
    if (was) apply(table, was.column, was.descending);
  }

  function enhanceAll() {
    Array.prototype.forEach.call(document.querySelectorAll("main table"), enhance);
  }

  enhanceAll();
  document.addEventListener("fabric:refreshed", enhanceAll);
})();
