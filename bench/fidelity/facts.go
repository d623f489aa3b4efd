package main

// Kind is the kind of a planted fact.
type Kind string

// The kinds of planted facts.
const (
	KindEdit       Kind = "edit"       // a file edited and why
	KindRename     Kind = "rename"     // a function renamed
	KindError      Kind = "error"      // an error message and its fix
	KindSetting    Kind = "setting"    // a numeric setting
	KindPreference Kind = "preference" // a user preference
	KindDecision   Kind = "decision"   // a decision and its reason
)

// Kinds lists every kind, in the order the tables show them.
var Kinds = []Kind{KindEdit, KindRename, KindError, KindSetting, KindPreference, KindDecision}

// template is one planted fact before its placeholders are filled:
// {noun} {Noun} {item} {Item} {items} {Items} {file} {base} {pkg} {config}.
// text is the message that holds the fact (an assistant message, or the
// user's for a preference); query the question a model would ask about
// it; keys the tokens a summary must hold to keep it.
type template struct {
	text, query string
	keys        []string
	// prompt is the user message that starts the fact's turn ("" for a
	// preference, whose text is the user message).
	prompt string
	// file, for an edit, is the index of the domain file edited.
	file int
	// old and new: the names of a rename, the values of a setting, the
	// setting name in name.
	name, old, new string
	// errLine and command, for an error: the failing command's error line.
	errLine, command string
}

var editTemplates = []template{
	{file: 1, prompt: "The month-end figures in {file} come out a cent off on the big batches, please sort it out.",
		text:  "Changed {file}: {noun} totals now use banker's rounding, because rounding half up drifted by a cent on large batches.",
		query: "why did we switch how the {noun} totals get rounded in {base}?", keys: []string{"{base}", "banker"}},
	{file: 2, prompt: "During yesterday's outage {file} kept hitting the upstream every second. Can you calm it down?",
		text:  "Edited {file} so the retry loop backs off exponentially up to 30 seconds; the fixed one-second retry hammered the {noun} upstream during outages.",
		query: "why do retries in {base} back off now instead of waiting a fixed delay?", keys: []string{"{base}", "exponential"}},
	{file: 0, prompt: "The worker crashed on an {item} with no ID again. Guard against it where it comes in, in {file}.",
		text:  "Updated {file}: {items} are now validated before they are queued, because an empty {item} ID crashed the worker downstream.",
		query: "what made us add validation of {items} ahead of the queue in {base}?", keys: []string{"{base}", "crash"}},
	{file: 4, prompt: "The daemon dies with EMFILE after a few days. I suspect {file}.",
		text:  "Modified {file} to close the {noun} file handle in a defer; without it the daemon leaked descriptors until it hit the ulimit.",
		query: "why does {base} defer closing the handle now?", keys: []string{"{base}", "leak"}},
	{file: 3, prompt: "The cache in {file} throws away exactly the {items} everyone asks for. Fix the eviction.",
		text:  "Rewrote the {noun} cache eviction in {file} to LRU, since the old FIFO order evicted the hottest {items} first.",
		query: "what was wrong with the order in which the cache in {base} evicts?", keys: []string{"{base}", "LRU"}},
	{file: 5, prompt: "The reports were wrong around the clock change last weekend; {file} writes the times.",
		text:  "Patched {file}: timestamps are stored in UTC now, because local time broke the {noun} reports across the daylight saving switch.",
		query: "why did we start storing the {noun} timestamps as UTC in {base}?", keys: []string{"{base}", "UTC"}},
	{file: 6, prompt: "The export OOMs for the biggest tenants. It is in {file}.",
		text:  "Changed {file} to stream {items} in pages of 500 instead of loading them all; the export ran out of memory on the biggest tenants.",
		query: "why does {base} page through the {items} rather than load everything at once?", keys: []string{"{base}", "memory"}},
	{file: 7, prompt: "go test -race complains about {file}, have a look.",
		text:  "Edited {file} to take the lock before reading the {noun} map, because the race detector flagged a concurrent map read and write.",
		query: "why must reads of the map in {base} hold a lock?", keys: []string{"{base}", "race"}},
}

var renameTemplates = []template{
	{old: "parse{Noun}", new: "parse{Items}", prompt: "`parse{Noun}` is a misleading name now, pick a better one and update the callers.",
		text:  "Renamed `parse{Noun}` to `parse{Items}` in {file} and its 6 callers: the function parses every {item} of a journal, not only the {noun} header.",
		query: "what did we call the {noun} parsing function before the rename?", keys: []string{"parse{Noun}", "parse{Items}"}},
	{old: "load{Noun}Config", new: "read{Noun}Settings", prompt: "I keep misreading `load{Noun}Config`; give it a name that says what it does.",
		text:  "Renamed `load{Noun}Config` to `read{Noun}Settings`: the function only reads the {noun} settings file and never loaded defaults.",
		query: "what was the old name of the function reading {noun} settings?", keys: []string{"load{Noun}Config", "read{Noun}Settings"}},
	{old: "{Noun}Manager", new: "{Noun}Registry", prompt: "`{Noun}Manager` manages nothing. Rename it.",
		text:  "Renamed `{Noun}Manager` to `{Noun}Registry` everywhere; the type only registers {items}, it manages nothing.",
		query: "what was the type that registers {items} called before the rename?", keys: []string{"{Noun}Manager", "{Noun}Registry"}},
	{old: "flush{Noun}", new: "sync{Noun}ToDisk", prompt: "`flush{Noun}` sounds like it only empties a buffer. Rename it to something honest.",
		text:  "Renamed `flush{Noun}` to `sync{Noun}ToDisk` in {file}: it fsyncs the {noun} file to disk, and flush suggested it only emptied a buffer.",
		query: "what was the disk fsync function for {noun} files called before?", keys: []string{"flush{Noun}", "sync{Noun}ToDisk"}},
	{old: "check{Item}", new: "validate{Item}Schema", prompt: "`check{Item}` is too vague, the name should say it is about the schema.",
		text:  "Renamed `check{Item}` to `validate{Item}Schema`: the function validates the {item} against the JSON schema, it does not check permissions.",
		query: "what was the {item} schema validation function called before its rename?", keys: []string{"check{Item}", "validate{Item}Schema"}},
	{old: "get{Items}", new: "list{Items}Page", prompt: "`get{Items}` does not get all of them any more. Rename it.",
		text:  "Renamed `get{Items}` to `list{Items}Page` in {file}: the function returns one page of {items} and a cursor, not all of them.",
		query: "before the rename, what was the paging function for {items} named?", keys: []string{"get{Items}", "list{Items}Page"}},
}

var errorTemplates = []template{
	{command: "go test ./{pkg}/...", errLine: "dial tcp 127.0.0.1:5432: connect: connection refused", prompt: "The {pkg} tests are red on my machine, can you see why?",
		text:  "The {pkg} tests failed with `dial tcp 127.0.0.1:5432: connect: connection refused`: nothing was listening on the database port. Fixed it by starting the database in TestMain before any test runs.",
		query: "how did we fix the refused database connections in the {noun} tests?", keys: []string{"connection refused", "TestMain"}},
	{command: "go test ./{pkg}/...", errLine: "panic: assignment to entry in nil map", prompt: "Something panics in {pkg}, please track it down.",
		text:  "`panic: assignment to entry in nil map` came from new{Noun}Index writing into an index map that was never made; fixed by initialising the map in the constructor.",
		query: "what caused the panic about assigning into a nil map, and what was the fix?", keys: []string{"nil map", "constructor"}},
	{command: "go build ./...", errLine: "{file}:88:14: undefined: round{Noun}Half", prompt: "The build is broken since the merge, fix it please.",
		text:  "The build failed with `{file}:88:14: undefined: round{Noun}Half` because the rounding helper was deleted upstream; fixed by calling math.RoundToEven instead.",
		query: "what did we call instead of the rounding helper whose deletion broke the build?", keys: []string{"undefined", "RoundToEven"}},
	{command: "go run ./cmd/{name}d sync --once", errLine: "sync: context deadline exceeded", prompt: "The nightly sync job hangs and then dies. Look into it.",
		text:  "`sync: context deadline exceeded` in the {noun} sync job: the HTTP client had no timeout, so one slow upstream call held the worker; fixed by giving the client a 10 s timeout per request.",
		query: "how did we keep the nightly {noun} sync from exceeding its deadline?", keys: []string{"deadline exceeded", "10 s"}},
	{command: "go test -run Import ./{pkg}/...", errLine: "pq: duplicate key value violates unique constraint \"{items}_pkey\"", prompt: "The import test fails now and then, can you find out why?",
		text:  "`pq: duplicate key value violates unique constraint \"{items}_pkey\"`: the importer retried a batch that had already committed. Fixed by making the insert an upsert with ON CONFLICT DO NOTHING.",
		query: "what was the fix for the duplicate-key violation when the importer retries a batch?", keys: []string{"duplicate key", "ON CONFLICT"}},
	{command: "go run ./cmd/{name}d serve", errLine: "open {config}: too many open files", prompt: "After a day of config reloads the server cannot open anything. Why?",
		text:  "`too many open files` from the {noun} config watcher: every reload opened a new fsnotify watcher and never closed the old one. Fixed by closing the previous watcher before replacing it.",
		query: "why did the config watcher run out of file descriptors, and how did we fix it?", keys: []string{"too many open files", "previous watcher"}},
	{command: "go test ./internal/...", errLine: "json: cannot unmarshal string into Go struct field {Item}.amount of type int64", prompt: "The partner integration test broke overnight.",
		text:  "`json: cannot unmarshal string into Go struct field {Item}.amount of type int64`: the partner API sends amounts as strings. Fixed by decoding amount with json.Number.",
		query: "how do we decode the amounts the partner sends in string form now?", keys: []string{"cannot unmarshal", "json.Number"}},
	{command: "go test -run Shutdown ./...", errLine: "sql: database is closed", prompt: "The shutdown test is flaky, please make it reliable.",
		text:  "`sql: database is closed` during shutdown: the {noun} flusher ran after db.Close. Fixed by stopping the flusher and waiting for it before closing the database.",
		query: "what change stopped the flusher from hitting a closed database when we shut down?", keys: []string{"database is closed", "flusher"}},
}

var settingTemplates = []template{
	{name: "max_open_conns", old: "10", new: "25", prompt: "The nightly import stalls waiting for the database. Tune it.",
		text:  "Set `max_open_conns` to 25 in {config}; with 10 the connection pool ran dry under the nightly {noun} import.",
		query: "what limit did we choose for open connections in the pool?", keys: []string{"max_open_conns", "25"}},
	{name: "request_timeout_ms", old: "1000", new: "2500", prompt: "Healthy upstream calls get cut off. Adjust {config}.",
		text:  "Set `request_timeout_ms` to 2500 in {config}: the upstream p99 is 1.9 s, so 1000 ms cut off healthy requests.",
		query: "which timeouts did we settle on for upstream requests?", keys: []string{"request_timeout_ms", "2500"}},
	{name: "batch_size", old: "5000", new: "750", prompt: "Imports lock the tables for too long; find a better setting.",
		text:  "Set `batch_size` to 750 for the {noun} importer in {config}; 5000 made each transaction hold locks for over a second.",
		query: "what size do the {noun} importer's batches have now?", keys: []string{"batch_size", "750"}},
	{name: "cache_ttl_seconds", old: "3600", new: "90", prompt: "Customers see stale prices for an hour. Fix the config.",
		text:  "Set `cache_ttl_seconds` to 90 in {config}, because {items} change within minutes and 3600 served stale prices.",
		query: "how long does caching of {items} last, what TTL?", keys: []string{"cache_ttl_seconds", "90"}},
	{name: "worker_count", old: "32", new: "14", prompt: "The API is starved for CPU when the workers run. Tune them.",
		text:  "Set `worker_count` to 14 in {config}: the host has 16 cores and the {noun} API needs two of them.",
		query: "how many workers did we configure given the cores of the host?", keys: []string{"worker_count", "14"}},
	{name: "max_retries", old: "20", new: "5", prompt: "One broken {item} holds up the whole queue for ages.",
		text:  "Set `max_retries` to 5 in {config}; beyond that a failing {item} only delays the rest of the queue.",
		query: "how often is a failing {item} retried before we give up?", keys: []string{"max_retries", "5"}},
	{name: "max_body_bytes", old: "65536", new: "1048576", prompt: "Uploads over 64 KB are refused but we need bigger ones.",
		text:  "Set `max_body_bytes` to 1048576 (1 MiB) in {config}: uploads of {items} above that are rejected with 413.",
		query: "what body size limit applies to uploaded {items}?", keys: []string{"max_body_bytes", "1048576"}},
	{name: "shutdown_grace_seconds", old: "5", new: "20", prompt: "Deploys cut off work in progress. Give it more time.",
		text:  "Set `shutdown_grace_seconds` to 20 in {config} so in-flight {items} can finish before the pod is killed.",
		query: "what grace does shutting down give in-flight {items}?", keys: []string{"shutdown_grace_seconds", "20"}},
}

var preferenceTemplates = []template{
	{text: "From now on, always write table-driven tests with t.Run subtests; they are easier to extend.",
		query: "did I want subtests in a table for new test code?", keys: []string{"table-driven"}},
	{text: "Please never add a new dependency to go.mod without asking me first.",
		query: "may new dependencies go into go.mod without my ok?", keys: []string{"dependenc"}},
	{text: "Keep commit messages in the imperative mood and under 72 characters, please.",
		query: "what mood and length did I want for a commit message?", keys: []string{"imperative"}},
	{text: "Don't use panic for errors in library code; return an error instead. Panics are only for bugs.",
		query: "is it ok to panic on errors inside our libraries?", keys: []string{"panic"}},
	{text: "I prefer logging through zap with structured fields; never use fmt.Printf for logs.",
		query: "what did I say about logger calls: printf, or structure in the fields?", keys: []string{"zap"}},
	{text: "Always wrap errors with %w and a short context, like fmt.Errorf(\"open {noun}: %w\", err).",
		query: "how should wrapped errors carry their context?", keys: []string{"%w"}},
	{text: "Please keep functions under 60 lines; split anything longer into helpers.",
		query: "how long may a function get before it should be split into helpers?", keys: []string{"60 lines"}},
	{text: "Write the docs with British English spelling: colour, behaviour, initialise.",
		query: "how should English words be spelled in the documentation?", keys: []string{"British"}},
}

var decisionTemplates = []template{
	{prompt: "Which format should the exports use? The analysts complained about CSV.",
		text:  "Decision: the exports are written in Parquet format, not CSV, because the analysts load them into DuckDB and CSV loses the decimal types.",
		query: "why was CSV rejected as the export format?", keys: []string{"Parquet", "decimal"}},
	{prompt: "Should we move off SQLite? Someone suggested PostgreSQL.",
		text:  "We'll keep the {noun} store on SQLite rather than moving to PostgreSQL for now: a single node serves all tenants and the backups are one file.",
		query: "why is the {noun} store staying on SQLite, not moved to PostgreSQL?", keys: []string{"SQLite", "one file"}},
	{prompt: "The vendor offers webhooks for {items}; should we use them?",
		text:  "Decided to poll the {noun} API every 30 s instead of using webhooks, since the vendor's webhooks drop events when our endpoint is slow.",
		query: "why don't we rely on the vendor's webhook instead of polling the {noun} API?", keys: []string{"poll", "drop events"}},
	{prompt: "Should the CLI get its own repository?",
		text:  "Going with a monorepo for the {noun} service and its CLI: they release together and share the protobuf definitions.",
		query: "why do the CLI and the {noun} service live in one repo, sharing definitions?", keys: []string{"monorepo", "protobuf"}},
	{prompt: "Row locks or something else for concurrent edits of {items}?",
		text:  "We chose optimistic locking with a version column over row locks, because {items} are rarely edited concurrently and row locks blocked the readers.",
		query: "why did we pick optimistic concurrency control instead of locking rows?", keys: []string{"optimistic", "version column"}},
	{prompt: "How should we represent money in {pkg}?",
		text:  "Decision: money amounts are int64 cents, never float64, because float rounding lost cents in the monthly {noun} totals.",
		query: "why are amounts of money stored as integer cents rather than floats?", keys: []string{"int64", "cents"}},
	{prompt: "REST or gRPC for the internal {noun} API?",
		text:  "We went with gRPC instead of REST for the internal {noun} API: streaming {items} is the main use and gRPC streams them natively.",
		query: "what made us choose gRPC over REST internally?", keys: []string{"gRPC", "stream"}},
	{prompt: "Do we need a feature flag service?",
		text:  "We settled on feature flags in the config file instead of a flag service, to avoid another network dependency at startup.",
		query: "why do feature flags live in the configuration rather than in a dedicated flag service?", keys: []string{"feature flags", "startup"}},
}

// templates returns the templates of a kind.
func templates(k Kind) []template {
	switch k {
	case KindEdit:
		return editTemplates
	case KindRename:
		return renameTemplates
	case KindError:
		return errorTemplates
	case KindSetting:
		return settingTemplates
	case KindPreference:
		return preferenceTemplates
	case KindDecision:
		return decisionTemplates
	}
	return nil
}
