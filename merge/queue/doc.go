// Package queue is the merge queue's policy, apart from git and from the
// goroutines that carry it out: the items and their statuses, the one table
// of status changes allowed (Check), the order the worker takes items in
// (dependencies, priority boost, FIFO), retries, and what a person may do
// to an item (approve, retry, drop, queue again). Everything here is a pure
// function of the items; its tests run with no git on PATH.
package queue
