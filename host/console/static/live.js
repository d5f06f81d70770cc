// Live refresh of a console list or detail page (docs/console.md, "Live refresh").
// The page works without this script; with it, a change of the rows the page shows
// puts a notice with a reload link in the page's #live status region. It never
// reloads by itself: the reader may be in the middle of a form. On a list page the
// stream tracks the rows shown: one that leaves the list (a "left" event) is struck
// through and named in the status region ("<display text> left this list").
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || typeof window.EventSource !== "function") {
    return;
  }
  var subject = box.getAttribute("data-subject");
  var source = new EventSource(box.getAttribute("data-stream"));

  function tell() {
    source.close();
    var reload = document.createElement("a");
    var here = new URL(window.location.href);
    here.searchParams.delete("done"); // the "Done: ..." notice belongs to the last load
    reload.href = here.toString();
    reload.textContent = "reload";
    box.textContent = box.getAttribute("data-message") + " — ";
    box.appendChild(reload);
  }

  source.addEventListener("open", function () {
    box.setAttribute("data-live", "open"); // listening: the stream is registered
  });
  source.addEventListener("change", function (event) {
    var change = JSON.parse(event.data);
    if (!subject || change.id === subject) {
      tell();
    }
  });
  source.addEventListener("left", function (event) {
    var left = JSON.parse(event.data);
    var rows = document.querySelectorAll("tr[data-row]");
    for (var i = 0; i < rows.length; i += 1) {
      if (rows[i].getAttribute("data-row") === left.id) {
        rows[i].classList.add("left");
        var note = document.createElement("p");
        note.textContent = rows[i].getAttribute("data-display") + " left this list";
        box.appendChild(note);
      }
    }
  });
  // The stream could not resume: changes may have been missed.
  source.addEventListener("reset", tell);
})();
