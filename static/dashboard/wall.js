// The wall's problem list fits its screen: rows past the list's end (the oldest of the least severe: the
// server sends them last) are hidden, never cut mid-line, and "+N more" counts them with those not sent.
(function () {
  "use strict";

  function fit() {
    var list = document.querySelector(".wall-problems");
    var more = document.querySelector(".wall-more");
    if (!list || !more) return;
    var rows = Array.prototype.slice.call(list.querySelectorAll("li[data-opened]"));
    var total = parseInt(list.dataset.total, 10) || 0;
    var notSent = Math.max(0, total - rows.length);
    rows.forEach(function (row) { row.style.display = ""; });
    more.hidden = true;
    if (list.scrollHeight <= list.clientHeight + 1 && notSent === 0) return;
    more.hidden = false;  // it takes its room first: the rows are measured against what is left
    var bottom = list.getBoundingClientRect().bottom + 0.5, hidden = 0;
    rows.forEach(function (row) {
      if (hidden || row.getBoundingClientRect().bottom > bottom) {
        row.style.display = "none";
        hidden += 1;
      }
    });
    var n = hidden + notSent;
    more.querySelector(".n").textContent = n.toLocaleString("en-US");
    more.hidden = n === 0;
  }

  fit();
  window.addEventListener("resize", fit);
  document.addEventListener("fabric:refreshed", fit);
})();
