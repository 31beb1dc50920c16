// Sorting and filtering of the workload table. The page is complete without it: the controls
// are hidden until this runs. The state lives in the address's fragment
// (#q=a100&readiness=blocked&cutover=Partial&namespace=research&sort=3-desc), so a filtered view can be shared.
(function () {
  "use strict";
  var table = document.getElementById("rows");
  var form = document.querySelector("form.controls");
  if (!table || !form) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var sort = { col: -1, dir: "asc" };

  function cellValue(row, col, kind) {
    var cell = row.cells[col];
    if (kind === "num") { return parseFloat(cell.getAttribute("data-value") || cell.textContent) || 0; }
    return cell.textContent.trim().toLowerCase();
  }

  function applySort() {
    var order = rows.slice();
    if (sort.col >= 0) {
      var kind = heads[sort.col].getAttribute("data-sort");
      var sign = sort.dir === "desc" ? -1 : 1;
      order.sort(function (a, b) {
        var x = cellValue(a, sort.col, kind), y = cellValue(b, sort.col, kind);
        if (x < y) { return -sign; }
        if (x > y) { return sign; }
        return rows.indexOf(a) - rows.indexOf(b);
      });
    }
    order.forEach(function (r) { body.appendChild(r); });
    heads.forEach(function (th, i) {
      if (!th.hasAttribute("data-sort")) { return; }
      if (i === sort.col) { th.setAttribute("aria-sort", sort.dir === "desc" ? "descending" : "ascending"); }
      else { th.removeAttribute("aria-sort"); }
    });
  }

  function applyFilter() {
    var q = form.elements.q.value.trim().toLowerCase();
    var readiness = form.elements.readiness.value;
    var ns = form.elements.namespace.value;
    var cutover = form.elements.cutover ? form.elements.cutover.value : "";
    var shown = 0;
    rows.forEach(function (r) {
      var ok = (!readiness || r.getAttribute("data-readiness") === readiness) &&
        (!cutover || r.getAttribute("data-cutover") === cutover) &&
        (!form.elements.namespace.value || r.getAttribute("data-namespace") === ns) &&
        (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) { shown++; }
    });
    form.elements.shown.value = shown + " of " + rows.length + " workloads shown";
  }

  function save() {
    var parts = [];
    ["q", "readiness", "cutover", "namespace"].forEach(function (k) {
      if (!form.elements[k]) { return; }
      var v = form.elements[k].value;
      if (v) { parts.push(k + "=" + encodeURIComponent(v)); }
    });
    if (sort.col >= 0) { parts.push("sort=" + sort.col + "-" + sort.dir); }
    var hash = parts.length ? "#" + parts.join("&") : "";
    if (window.history && history.replaceState) { history.replaceState(null, "", hash || location.pathname + location.search); }
  }

  function load() {
    var h = location.hash.replace(/^#/, "");
    if (!h || h.indexOf("=") < 0) { return; }
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      var k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1));
      if (k === "sort") {
        var m = /^(\d+)-(asc|desc)$/.exec(v);
        if (m && heads[+m[1]] && heads[+m[1]].hasAttribute("data-sort")) { sort = { col: +m[1], dir: m[2] }; }
      } else if (form.elements[k]) {
        form.elements[k].value = v;
      }
    });
  }

  heads.forEach(function (th, i) {
    if (!th.hasAttribute("data-sort")) { return; }
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = th.textContent;
    b.title = "Sort by " + th.textContent;
    th.textContent = "";
    th.appendChild(b);
    b.addEventListener("click", function () {
      sort = { col: i, dir: sort.col === i && sort.dir === "asc" ? "desc" : "asc" };
      applySort();
      save();
    });
  });
  form.addEventListener("input", function () { applyFilter(); save(); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  form.hidden = false;
  load();
  applySort();
  applyFilter();

  // Paper shows every reason.
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll(".reasons details"), function (d) { d.open = true; });
  });
})();
