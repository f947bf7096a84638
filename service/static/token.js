// The admin token: `hindsight serve` on a loopback host prints the dashboard's address with ?token=...; the page
// keeps it for this tab only (sessionStorage) and takes it out of the address bar, so it stays out of the history
// and of a copied link. Loaded before the other scripts.
"use strict";

const ADMIN_TOKEN_KEY = "hindsight.adminToken";

(function takeTokenFromUrl() {
  localStorage.removeItem("hindsight.labels.token"); // where earlier versions kept it, beyond the tab
  const url = new URL(window.location.href);
  const given = url.searchParams.get("token");
  if (given === null) return;
  if (given) sessionStorage.setItem(ADMIN_TOKEN_KEY, given);
  url.searchParams.delete("token");
  history.replaceState(history.state, "", url.pathname + url.search + url.hash);
})();

// the tab's admin token, or sets it when value is given ("" forgets it)
function adminToken(value) {
  if (value === undefined) return sessionStorage.getItem(ADMIN_TOKEN_KEY) || "";
  if (value) sessionStorage.setItem(ADMIN_TOKEN_KEY, value);
  else sessionStorage.removeItem(ADMIN_TOKEN_KEY);
  return value;
}
