// Package rollout holds the decisions of a fleet rollout, free of the
// Kubernetes API: which clusters go in which wave, which of them may
// start now (concurrency, failure budget, deadlines, soak, wave gates,
// maintenance windows), and when each cluster's maintenance window opens
// and closes. A controller observes the fleet's ClusterVersions, turns
// them into Members, asks Decide, and acts on the Decision; it keeps no
// state of its own (level-based), so a restart decides the same from the
// same fleet, never starting a cluster twice nor exceeding the
// concurrency.
//
// Maintenance windows follow the cron syntax of Kubernetes CronJobs
// (github.com/robfig/cron/v3, the parser CronJobs use): a Window opens at
// each time its five-field Schedule names, in its TimeZone (an IANA name;
// the zone database is compiled in, so that an image without tzdata
// works), and stays open for its Duration.
package rollout
