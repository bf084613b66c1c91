"""What the slow tiers of the suite share: free ports (`ports`), one polling helper (`waiting`),
the launched product (`product`: `python -m lexweb.launcher run`, once per test session) and the
browser (`browser`: Playwright driving Debian's Chromium, with axe-core on every page)."""
