// Package controllers holds the controllers that run on the leader replica
// only: the template controller (collects unused ResourceClaimTemplates,
// recreates missing ones), the explain controller (an Event on every pod
// admission decided, and on every pod it never saw) and the strand
// controller (translated pods waiting while the device plugin has room,
// pods no node can serve). They read the informer inventory; their only
// writes are Events, template deletions and creations, and — where a
// namespace asks for it — the deletion of a stranded pod.
package controllers
