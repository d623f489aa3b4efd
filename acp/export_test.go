package acp

// SetSubscriptionBuffer sets the buffer of the ACP sessions' subscriptions
// opened from now on, so that a test can make the owner fall behind the
// session; it returns the function that restores the default.
func SetSubscriptionBuffer(n int) (restore func()) {
	old := subscriptionBuffer
	subscriptionBuffer = n
	return func() { subscriptionBuffer = old }
}
