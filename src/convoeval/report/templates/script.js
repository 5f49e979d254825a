(function () {
  "use strict";
  var q = document.getElementById("q");
  function val(id) { var el = document.getElementById(id); return el ? el.value : ""; }
  function filter() {
    var text = q ? q.value.trim().toLowerCase() : "";
    var verdict = val("f-verdict"), target = val("f-target"), suite = val("f-suite");
    var tests = document.querySelectorAll("details.test"), shown = 0;
    tests.forEach(function (t) {
      var ok = (!verdict || t.dataset.verdict === verdict) && (!target || t.dataset.target === target) &&
        (!suite || t.dataset.suite === suite) && (!text || t.dataset.search.indexOf(text) >= 0);
      t.hidden = !ok; if (ok) { shown += 1; }
    });
    var counter = document.getElementById("shown");
    if (counter) { counter.textContent = shown + " of " + tests.length + " tests"; }
  }
  ["q", "f-verdict", "f-target", "f-suite"].forEach(function (id) {
    var el = document.getElementById(id);
    if (el) { el.addEventListener("input", filter); el.addEventListener("change", filter); }
  });
  var wanted = new URLSearchParams(location.search).get("q");
  if (q && wanted) {
    q.value = wanted; filter();
    var shownTests = document.querySelectorAll("details.test:not([hidden])");
    if (shownTests.length === 1) { shownTests[0].open = true; }
  }
  if (location.hash) {  // an id, never a selector: `#1` or `#<img>` would throw and stop this script
    var target = null;
    try { target = document.getElementById(decodeURIComponent(location.hash.slice(1))); } catch (e) { /* %zz */ }
    if (target && target.tagName === "DETAILS") { target.open = true; }
  }

  var rater = document.getElementById("rater");
  if (rater) {
    try { rater.value = localStorage.getItem("convoeval-rater") || ""; } catch (e) { /* file:// */ }
    rater.addEventListener("change", function () { try { localStorage.setItem("convoeval-rater", rater.value); } catch (e) {} });
  }
  document.querySelectorAll("form.label-form").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var status = form.querySelector(".saved");
      var who = rater ? rater.value.trim() : "";
      if (!who) { status.textContent = "enter your name as rater first"; if (rater) { rater.focus(); } return; }
      var body = {run_id: document.body.dataset.run, suite: form.dataset.suite,
        test_id: form.dataset.test, target: form.dataset.target, entry: form.dataset.entry, item: form.dataset.item,
        rater: who, label: form.elements.label.value, comment: form.elements.comment.value};
      fetch("/api/labels", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)})
        .then(function (r) { return r.json().then(function (data) { return [r.ok, data]; }); })
        .then(function (res) { status.textContent = res[0] ? "saved" : (res[1].error || "not saved"); })
        .catch(function () { status.textContent = "not saved: the viewer is not reachable"; });
    });
  });
})();
