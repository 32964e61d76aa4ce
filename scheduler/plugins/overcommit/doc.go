// Package overcommit is Volcano's overcommit plugin (volcano-sh/volcano v1.16.0-alpha.1,
// pkg/scheduler/plugins/overcommit/overcommit.go): the enqueue action admits a job
// only while the minimums of the admitted jobs that do not run yet, with the job's,
// stay within overcommit-factor (1.2 by default) times the cluster, less what is in
// use. It bounds how many gangs wait with their pods created.
package overcommit
