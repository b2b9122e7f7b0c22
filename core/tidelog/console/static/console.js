// The console's router: plain modules, no build step. Every API call goes through the console's
// own same-origin proxy (api.js), which signs it; the browser never holds keys.

import { accessScreen } from "./access.js";
import { groupScreen, groupsScreen } from "./groups.js";
import { messagesScreen } from "./messages.js";
import { topicsScreen } from "./topics.js";

const screen = document.getElementById("screen");
let shown = 0; // the screen on show: one left behind stops polling

const SCREENS = [
  [/^#\/topics\/(.+)$/, (match, live) => messagesScreen(screen, decodeURIComponent(match[1]), live)],
  [/^#\/groups\/(.+)$/, (match, live) => groupScreen(screen, decodeURIComponent(match[1]), live)],
  [/^#\/groups$/, () => groupsScreen(screen)],
  [/^#\/access$/, () => accessScreen(screen)],
  [/^(#\/topics)?$/, () => topicsScreen(screen)],
];

function route() {
  const mine = ++shown;
  const live = () => mine === shown;
  const section = ["#/groups", "#/access"].find((s) => location.hash.startsWith(s)) ?? "#/topics";
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  for (const [pattern, show] of SCREENS) {
    const match = location.hash.match(pattern);
    if (match) return show(match, live);
  }
  return topicsScreen(screen);
}

window.addEventListener("hashchange", route);
route();
