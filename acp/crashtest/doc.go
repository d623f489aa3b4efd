// Package crashtest holds the end-to-end crash test of the ACP agent
// (examples/acp-agent) on its SQLite store: TestCrashKillAgent drives one
// session through the Go ACP client, kills the agent process with SIGKILL at
// random instants (in appends, in compactions, between operations), and after
// every kill checks the store file directly and the replay of a new agent
// process (docs/design.md §4, §5, §7.6).
//
// The package has tests only. The default run kills 50 agents;
// -crash.agent.kills=N runs longer and -crash.agent.seed replays a run:
//
//	go test ./acp/crashtest/ -run TestCrashKillAgent -crash.agent.kills=1000
package crashtest
