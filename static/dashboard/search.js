// The header's search box: "/" goes to it from anywhere on the page, unless one is typing in a field.
(function () {
  "use strict";
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || typing(e.target)) return;
    var box = document.querySelector("form.search input[name=q]");
    if (!box) return;
    e.preventDefault();  // no "/" typed into the box
    box.focus();
    box.select();
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && e.target && e.target.matches && e.target.matches("form.search input[name=q]")) e.target.blur();
  });
})();
