// sessionkit serve: live updates of a session's page. The server sends the
// timeline entries that changed, rendered as on the page, and the chart;
// this script puts them in place. Nothing else on the pages needs script.
(function () {
  "use strict";
  var tl = document.getElementById("timeline");
  if (!tl || !window.EventSource) return;
  var live = document.getElementById("live");
  var url = "/s/" + encodeURIComponent(tl.dataset.session) + "/events?after=" + encodeURIComponent(tl.dataset.after);
  var es = new EventSource(url);
  function say(text, cls) {
    if (!live) return;
    live.hidden = false;
    live.textContent = text;
    live.className = "live " + (cls || "muted");
  }
  es.addEventListener("open", function () { say("live", "muted"); });
  es.addEventListener("update", function (e) {
    var u = JSON.parse(e.data);
    u.rows.forEach(function (r) {
      var t = document.createElement("template");
      t.innerHTML = r.html.trim();
      var el = t.content.firstElementChild;
      var old = document.getElementById("pos-" + r.pos);
      if (old) {
        old.replaceWith(el);
      } else if (tl.dataset.last === "true") {
        tl.appendChild(el);
      }
    });
    var box = document.getElementById("chart-box");
    if (box) box.innerHTML = u.chart;
    var served = document.getElementById("served");
    if (served) {
      served.textContent = u.served ? "served by " + u.served : "not served";
    }
    var entries = document.getElementById("entries");
    if (entries) entries.textContent = u.entries + " entries";
    tl.dataset.after = String(u.seq);
    say("live · updated " + new Date().toLocaleTimeString(), "muted");
  });
  es.addEventListener("failure", function (e) {
    es.close();
    say(JSON.parse(e.data).error, "error");
  });
})();
