// Package storekit is for people writing a [history.Store]: the checks a
// store makes on each write, the assembly of what Timeline, Segments and
// ListSessions return from the rows it reads, and the list cursor. With
// them, a new store gives the answers and errors the stores of sessionkit
// give, which the conformance suite history/historytest tests.
//
// Users of a store do not need this package: the vocabulary and the
// interfaces are in history.
package storekit
