"""A server as a client sees it: where it is (`locate`), whether it answers (`checks`), which ports
are free (`ports`)."""
