// Package eventfeed holds the mechanics behind session's public Handle and
// Subscription types, shared by a local session and the ACP remote
// session: a Feed numbers events, keeps the durable ones for replay and
// delivers them to subscriptions; a Handle tracks one accepted command.
//
// It knows nothing of session's event types: a Feed is generic over the
// event and payload types, and the errors it reports are the ones its
// Config names. session declares its public types as defined types over
// these (type Handle[R any] eventfeed.Handle[R]) and converts pointers.
package eventfeed
