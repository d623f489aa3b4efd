package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// Msg is one message of a [Script], in the order the session commits it.
type Msg struct {
	Role   history.Role
	Text   string
	Calls  []history.ToolCall // assistant: the tool calls it makes
	CallID string             // tool: the call it answers
}

// Fact is one planted fact of a [Script].
type Fact struct {
	Kind Kind
	// Msg is the index in Script.Msgs of the message that holds the fact:
	// its Text is that message's text.
	Msg  int
	Text string
	// Keys are the tokens a summary must hold to keep the fact (see
	// [Kept]).
	Keys []string
	// Query is the question a model would ask about the fact; it does not
	// repeat the fact's wording.
	Query string
}

// Script is one synthetic coding session: its messages (user prompts,
// assistant messages with tool calls, tool results) and the facts planted
// in them.
type Script struct {
	ID     string
	Domain string
	Msgs   []Msg
	// Turns holds the index in Msgs of each turn's user message; a turn
	// runs to the next one.
	Turns []int
	Facts []Fact
}

// GenConfig is what [Generate] makes.
type GenConfig struct {
	Seed     uint64
	Sessions int // scripts to make
	Messages int // the least number of messages of each
	// FactsPerKind is how many facts of each kind a script holds (at most
	// the number of templates of the kind).
	FactsPerKind int
}

// Generate returns c.Sessions scripts. The same GenConfig always gives the
// same scripts.
func Generate(c GenConfig) []Script {
	out := make([]Script, c.Sessions)
	for i := range out {
		out[i] = generate(c, i)
	}
	return out
}

// gen is the state of one script being generated.
type gen struct {
	r      *rand.Rand
	d      domain
	seed   uint64
	id     string
	s      Script
	calls  int
	values map[string]string // setting name → its current value
	rename *strings.Replacer // old names → new names of the renames done so far
	pairs  []string
	bodies map[string]string // file → its code, before renames
	owner  map[string]string // identifier → the file that defines it
	// chatter is the order in which the chatter exchanges not yet used
	// come; each is used once before any is used again.
	chatter []int
}

func generate(c GenConfig, i int) Script {
	g := &gen{
		r:      rand.New(rand.NewPCG(c.Seed, uint64(i))),
		d:      domains[i%len(domains)],
		seed:   c.Seed,
		id:     fmt.Sprintf("fidelity-%d-%03d", c.Seed, i),
		values: map[string]string{},
		rename: strings.NewReplacer(),
		bodies: map[string]string{},
		owner:  map[string]string{},
	}
	g.s = Script{ID: g.id, Domain: g.d.name}
	for _, t := range settingTemplates {
		g.values[t.name] = t.old
	}
	// The facts, two (FactsPerKind) of each kind, in a shuffled order.
	var plan []template
	var kinds []Kind
	for _, k := range Kinds {
		ts := templates(k)
		for _, j := range g.r.Perm(len(ts))[:min(c.FactsPerKind, len(ts))] {
			plan = append(plan, ts[j])
			kinds = append(kinds, k)
		}
	}
	order := g.r.Perm(len(plan))
	// Every identifier has a file that defines it; a rename's old name
	// lives in the rename's file.
	for j, id := range g.d.idents {
		g.owner[id] = g.d.files[j%len(g.d.files)]
	}
	files := make([]string, len(plan))
	for j, t := range plan {
		files[j] = g.d.files[g.r.IntN(4)]
		if kinds[j] == KindEdit {
			files[j] = g.d.files[t.file]
		}
		if kinds[j] == KindRename {
			g.owner[g.expand(t.old, files[j])] = files[j]
		}
	}
	// Before each fact come the two chatter exchanges that share the most
	// words with its query (near misses search has to tell from the
	// fact); the others are filler turns in a random order.
	taken := make([]bool, len(chatter))
	near := make([][]int, len(plan))
	for j, t := range plan {
		q := contentWords(g.expand(t.query, files[j]))
		for range 2 {
			best, most := -1, 0
			for c := range chatter {
				n := 0
				for _, w := range contentWords(g.expand(chatter[c][0]+" "+chatter[c][1], files[j])) {
					if slices.Contains(q, w) {
						n++
					}
				}
				if !taken[c] && n > most {
					best, most = c, n
				}
			}
			if best >= 0 {
				taken[best] = true
				near[j] = append(near[j], best)
			}
		}
	}
	for _, c := range g.r.Perm(len(chatter)) {
		if !taken[c] {
			g.chatter = append(g.chatter, c)
		}
	}
	// Fact n is planted in the first turn that starts after its share of
	// the messages, so facts are spread over the whole session.
	next := 0
	for next < len(order) || len(g.s.Msgs) < c.Messages {
		if next < len(order) && len(g.s.Msgs) >= (next*c.Messages*9/10)/len(order)+g.r.IntN(6) {
			j := order[next]
			for _, c := range near[j] {
				g.chat(chatter[c], files[j])
			}
			g.fact(kinds[j], plan[j], files[j])
			next++
			continue
		}
		g.filler()
	}
	return g.s
}

// expand fills a template's placeholders.
func (g *gen) expand(s, file string) string {
	d := g.d
	return strings.NewReplacer(
		"{noun}", d.noun, "{Noun}", title(d.noun), "{items}", d.items, "{Items}", title(d.items),
		"{item}", d.item, "{Item}", title(d.item), "{file}", file, "{base}", base(file),
		"{pkg}", d.pkg, "{config}", d.config, "{name}", d.name,
	).Replace(s)
}

// pick returns one of xs.
func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// user starts a turn with the user's message.
func (g *gen) user(text string) int {
	g.s.Turns = append(g.s.Turns, len(g.s.Msgs))
	g.s.Msgs = append(g.s.Msgs, Msg{Role: history.RoleUser, Text: text})
	return len(g.s.Msgs) - 1
}

// call is one tool call of an assistant step and the output it gets.
type call struct {
	tool string
	args map[string]string
	out  string
}

// step appends an assistant message making calls, then their results.
func (g *gen) step(text string, calls ...call) {
	m := Msg{Role: history.RoleAssistant, Text: text}
	var results []Msg
	for _, c := range calls {
		g.calls++
		id := fmt.Sprintf("call_%s_%d", g.id, g.calls)
		args, _ := json.Marshal(c.args)
		m.Calls = append(m.Calls, history.ToolCall{ID: id, Name: c.tool, Arguments: args})
		results = append(results, Msg{Role: history.RoleTool, Text: c.out, CallID: id})
	}
	g.s.Msgs = append(g.s.Msgs, m)
	g.s.Msgs = append(g.s.Msgs, results...)
}

// say appends the assistant's answer that ends a turn.
func (g *gen) say(text string) int {
	g.s.Msgs = append(g.s.Msgs, Msg{Role: history.RoleAssistant, Text: text})
	return len(g.s.Msgs) - 1
}

// fact plants one fact in a turn of its own.
func (g *gen) fact(k Kind, t template, file string) {
	x := func(s string) string { return g.expand(s, file) }
	var holder int
	switch k {
	case KindEdit:
		g.user(x(t.prompt))
		g.step(pick(g, "", "Let me read "+base(file)+" first."), g.read(file))
		g.step("", g.edit(file, 1+g.r.IntN(6), 1+g.r.IntN(4)))
		if g.r.IntN(2) == 0 {
			g.step("", g.run(fmt.Sprintf("go test ./%s/...", dir(file))))
		}
		holder = g.say(x(t.text))
	case KindRename:
		old, nw := x(t.old), x(t.new)
		g.user(x(t.prompt))
		g.step("", g.grep(old))
		edit := func(path string, n int) call {
			return call{"edit_file", map[string]string{"path": path, "old_text": old + "(", "new_text": nw + "("},
				fmt.Sprintf("edited %s: replaced %d occurrences (+%d -%d lines)", path, n, n, n)}
		}
		g.step(pick(g, "", "Renaming it in every file."), edit(file, 2), edit(g.other(file), 1))
		g.pairs = append(g.pairs, old, nw)
		g.rename = strings.NewReplacer(g.pairs...)
		g.step("", g.run("go build ./..."))
		holder = g.say(x(t.text))
	case KindError:
		g.user(x(t.prompt))
		cmd := x(t.command)
		g.step(pick(g, "", "Running it to see the failure."), call{"run_command", map[string]string{"command": cmd}, g.failure(cmd, x(t.errLine))})
		g.step("", g.read(file))
		g.step("", g.edit(file, 1+g.r.IntN(5), 1+g.r.IntN(3)))
		g.step("", g.run(cmd))
		holder = g.say(x(t.text))
	case KindSetting:
		g.user(x(t.prompt))
		g.step(pick(g, "", "The limit lives in "+g.d.config+"."), g.read(g.d.config))
		g.values[t.name] = t.new
		g.step("", call{"edit_file", map[string]string{"path": g.d.config, "old_text": t.name + ": " + t.old, "new_text": t.name + ": " + t.new},
			fmt.Sprintf("edited %s: replaced 1 occurrence (+1 -1 lines)", g.d.config)})
		holder = g.say(x(t.text))
	case KindPreference:
		holder = g.user(x(t.text))
		g.say(pick(g, "Understood, I will stick to that from now on.", "Noted. I'll follow that for the rest of the work.", "Got it; that applies to everything I write from here."))
	case KindDecision:
		g.user(x(t.prompt))
		g.step(pick(g, "", "Checking how it is used today."), g.grep(pick(g, g.d.idents...)))
		holder = g.say(x(t.text))
	}
	g.s.Facts = append(g.s.Facts, Fact{Kind: k, Msg: holder, Text: g.s.Msgs[holder].Text, Keys: expandAll(g, t.keys, file), Query: x(t.query)})
}

func expandAll(g *gen, keys []string, file string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = g.expand(k, file)
	}
	return out
}

// other returns a file of the project other than f.
func (g *gen) other(f string) string {
	for {
		if o := pick(g, g.d.files...); o != f {
			return o
		}
	}
}

// filler appends one ordinary turn: reads, searches, edits, commands.
func (g *gen) filler() {
	d := g.d
	file := pick(g, d.files...)
	ident := g.rename.Replace(pick(g, d.idents...))
	switch g.r.IntN(10) {
	case 9:
		// A question near the planted facts' topics, answered from the
		// code: search has to tell these from the facts.
		if len(g.chatter) == 0 {
			g.chatter = g.r.Perm(len(chatter))
		}
		g.chat(chatter[g.chatter[0]], file)
		g.chatter = g.chatter[1:]
	case 0, 1:
		g.user(g.expand(pick(g, "Show me {file}.", "Walk me through {file}.", "Open {file}, I want to see how it handles {items}.", "What is in {file}?"), file))
		g.step(pick(g, "", "Reading "+base(file)+"."), g.read(file))
		g.say(g.describe(file))
	case 2:
		g.user(pick(g, "Where is "+ident+" used?", "Find every call of "+ident+".", "Who calls "+ident+"?"))
		out := g.grep(ident)
		g.step("", out)
		g.say(fmt.Sprintf("%s is used in %d places: %s.", ident, strings.Count(out.out, "\n")+1, strings.Join(firstFields(out.out, 3), ", ")))
	case 3:
		pkg := dir(file)
		g.user(pick(g, "Run the tests for "+pkg+".", "Run the whole test suite.", "Does everything still build and pass?"))
		cmd := pick(g, "go test ./"+pkg+"/...", "go test ./...", "go vet ./... && go test ./...")
		g.step(pick(g, "", "Running the tests."), g.run(cmd))
		g.say(pick(g, "All packages pass.", "Everything is green.", "The tests pass; nothing to fix there."))
	case 4:
		g.user(g.expand(pick(g, "Add a doc comment to "+ident+".", "Make the error in "+ident+" mention the {item} ID.", "Replace the magic number in "+ident+" with a named constant."), file))
		owner := g.owner[ident]
		if owner == "" {
			owner = file
		}
		g.step("", g.read(owner))
		g.step("", g.edit(owner, 1+g.r.IntN(3), g.r.IntN(2)))
		g.say(fmt.Sprintf("Done in %s; %s compiles and its tests still pass.", base(owner), ident))
	case 5:
		dr := dir(file)
		g.user(pick(g, "What is in "+dr+"?", "List the files under "+dr+"."))
		g.step("", call{"list_files", map[string]string{"path": dr}, g.list(dr)})
		g.say(fmt.Sprintf("%s holds %d Go files; %s is the largest.", dr, len(strings.Split(g.list(dr), "\n")), base(file)))
	case 6:
		g.user(pick(g, "What changed since the last commit?", "Show me the last few commits.", "Is the tree clean?"))
		cmd := pick(g, "git status --short", "git log --oneline -6", "git diff --stat")
		g.step("", g.run(cmd))
		g.say(pick(g, "That is the current state of the tree.", "Nothing unexpected there.", "Those are the changes so far."))
	case 7:
		g.user(g.expand(pick(g, "Check {file} and run its tests.", "Look at {file} and tell me if anything is off.", "Review {file} for error handling."), file))
		g.step(pick(g, "", "Reading it, then the tests."), g.read(file))
		g.step("", g.run("go test ./"+dir(file)+"/..."))
		g.say(g.describe(file) + " " + pick(g, "The tests pass.", "Nothing is off there.", "Error handling looks consistent."))
	case 8:
		k := g.r.IntN(3)
		g.user(g.expand([]string{"Which files mention {items}?", "Search for TODOs in {pkg}.", "Find where we log {item} IDs."}[k], file))
		g.step("", g.grep([]string{title(d.item), "TODO", "zap.String(\"id\""}[k]))
		second := d.files[g.r.IntN(len(d.files))]
		g.step("", g.read(second))
		g.say(g.describe(second))
	}
}

// chat appends a turn of chatter.
func (g *gen) chat(c [3]string, file string) {
	g.user(g.expand(c[0], file))
	switch cmd := g.expand(c[2], file); {
	case cmd == "":
	case strings.HasPrefix(cmd, "grep "):
		g.step("", g.grep(strings.TrimPrefix(cmd, "grep ")))
	case strings.HasPrefix(cmd, "ls "):
		dr := strings.TrimPrefix(cmd, "ls ")
		g.step("", call{"list_files", map[string]string{"path": dr}, g.expand(dr+"/{items}.csv\n"+dr+"/golden.json", file)})
	default:
		g.step("", g.run(cmd))
	}
	g.say(g.expand(c[1], file))
}

func firstFields(out string, n int) []string {
	var fs []string
	for _, line := range strings.Split(out, "\n") {
		if f, _, ok := strings.Cut(line, ":"); ok && !slices.Contains(fs, f) {
			fs = append(fs, f)
		}
		if len(fs) == n {
			break
		}
	}
	return fs
}

// describe is the assistant's account of a file it read.
func (g *gen) describe(file string) string {
	funcs := g.funcs(file)
	return g.expand(pick(g,
		"{base} defines "+strings.Join(funcs, ", ")+"; the {items} pass through "+funcs[0]+" first.",
		"{base} is small: "+strings.Join(funcs, ", ")+", all of them working on {items}.",
		"In {base}, "+funcs[0]+" does the real work and the others are helpers around it.",
	), file)
}

// funcs returns the names a file defines, renames applied.
func (g *gen) funcs(file string) []string {
	var fs []string
	for id, f := range g.owner {
		if f == file {
			fs = append(fs, g.rename.Replace(id))
		}
	}
	slices.Sort(fs)
	if len(fs) == 0 {
		fs = []string{"init" + title(g.d.noun)}
	}
	return fs
}

// read returns a read_file call of path and its output.
func (g *gen) read(path string) call {
	return call{"read_file", map[string]string{"path": path}, g.content(path)}
}

// content returns a file's text as it is now.
func (g *gen) content(path string) string {
	if path == g.d.config {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s configuration\nlisten: \":8080\"\nlog_level: info\n", g.d.name)
		for _, t := range settingTemplates {
			fmt.Fprintf(&b, "%s: %s\n", t.name, g.values[t.name])
		}
		return b.String()
	}
	body, ok := g.bodies[path]
	if !ok {
		body = g.code(path)
		g.bodies[path] = body
	}
	return g.rename.Replace(body)
}

// lines are statements of the generated code.
var lines = []string{
	"if {x} == nil {\n\t\treturn fmt.Errorf(\"{noun}: nil {item}\")\n\t}",
	"ctx, cancel := context.WithTimeout(ctx, 5*time.Second)\n\tdefer cancel()",
	"for i, it := range {x}.{Items} {\n\t\tif err := it.Validate(); err != nil {\n\t\t\treturn fmt.Errorf(\"{item} %d: %w\", i, err)\n\t\t}\n\t}",
	"rows, err := s.db.QueryContext(ctx, `SELECT id, payload FROM {items} WHERE tenant = ?`, tenant)\n\tif err != nil {\n\t\treturn err\n\t}\n\tdefer rows.Close()",
	"s.mu.Lock()\n\tdefer s.mu.Unlock()",
	"log.Debug(\"{noun} step\", zap.String(\"id\", {x}.ID))",
	"total += {x}.Amount",
	"if len({x}.{Items}) > maxBatch {\n\t\treturn errTooLarge\n\t}",
	"b, err := json.Marshal({x})\n\tif err != nil {\n\t\treturn err\n\t}",
	"select {\n\tcase <-ctx.Done():\n\t\treturn ctx.Err()\n\tcase s.queue <- {x}:\n\t}",
	"// TODO: batch these writes once the store supports it.",
	"metrics.{Noun}Ops.Inc()",
}

// code makes a Go file for path defining its identifiers.
func (g *gen) code(path string) string {
	h := fnv.New64a()
	h.Write([]byte(path))
	r := rand.New(rand.NewPCG(g.seed, h.Sum64()))
	pkg := base(dir(path))
	if strings.HasPrefix(path, "cmd/") {
		pkg = "main"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"time\"\n)\n", pkg)
	for _, fn := range g.funcs(path) {
		fmt.Fprintf(&b, "\n// %s handles one %s of the %s.\nfunc %s(ctx context.Context, x *%s) error {\n", fn, g.d.item, g.d.noun, fn, title(g.d.item))
		for range 2 + r.IntN(4) {
			b.WriteString("\t" + strings.ReplaceAll(g.expand(lines[r.IntN(len(lines))], path), "{x}", "x") + "\n")
		}
		b.WriteString("\treturn nil\n}\n")
	}
	return b.String()
}

// edit returns an edit_file call of path and its output.
func (g *gen) edit(path string, added, removed int) call {
	fn := pick(g, g.funcs(path)...)
	sig := fmt.Sprintf("func %s(ctx context.Context, x *%s) error {", fn, title(g.d.item))
	guard := pick(g, "\n\tif x == nil {\n\t\treturn errNil\n\t}", "\n\tdefer trace(ctx, \""+fn+"\")()", "\n\tif err := ctx.Err(); err != nil {\n\t\treturn err\n\t}")
	return call{"edit_file", map[string]string{"path": path, "old_text": sig, "new_text": sig + guard},
		fmt.Sprintf("edited %s: replaced 1 occurrence (+%d -%d lines)", path, added, removed)}
}

// grep returns a grep call of pattern over the project and its output.
func (g *gen) grep(pattern string) call {
	var out []string
	for _, f := range g.d.files {
		for n, line := range strings.Split(g.content(f), "\n") {
			if strings.Contains(line, pattern) && len(out) < 12 {
				out = append(out, fmt.Sprintf("%s:%d:%s", f, n+1, line))
			}
		}
	}
	text := strings.Join(out, "\n")
	if text == "" {
		text = "no matches"
	}
	return call{"grep", map[string]string{"pattern": pattern, "path": "."}, text}
}

// run returns a run_command call that succeeds and its output.
func (g *gen) run(cmd string) call {
	var b strings.Builder
	switch {
	case strings.HasPrefix(cmd, "git status"):
		for _, f := range g.d.files[:1+g.r.IntN(3)] {
			fmt.Fprintf(&b, " M %s\n", f)
		}
	case strings.HasPrefix(cmd, "git log"):
		for i := range 6 {
			fmt.Fprintf(&b, "%07x %s: %s\n", g.r.Uint32()>>4, g.d.name, pick(g, "tidy imports", "more tests for "+g.d.items, "fix a typo", "bump dependencies", "split a long function", "document the config"))
			_ = i
		}
	case strings.HasPrefix(cmd, "git diff"):
		for _, f := range g.d.files[:2+g.r.IntN(3)] {
			fmt.Fprintf(&b, " %s | %d %s\n", f, 1+g.r.IntN(30), strings.Repeat("+", 1+g.r.IntN(8)))
		}
	case strings.HasPrefix(cmd, "git commit"):
		fmt.Fprintf(&b, "[main %07x] wip\n %d files changed, %d insertions(+), %d deletions(-)", g.r.Uint32()>>4, 1+g.r.IntN(5), 1+g.r.IntN(80), g.r.IntN(40))
	case strings.HasPrefix(cmd, "go build"):
		b.WriteString("(no output)\n")
	default:
		var seen []string
		for _, f := range g.d.files {
			if slices.Contains(seen, dir(f)) {
				continue
			}
			seen = append(seen, dir(f))
			if strings.HasPrefix(f, "cmd/") {
				fmt.Fprintf(&b, "?   \tgithub.com/acme/%s/%s\t[no test files]\n", g.d.name, dir(f))
				continue
			}
			fmt.Fprintf(&b, "ok  \tgithub.com/acme/%s/%s\t%d.%03ds\n", g.d.name, dir(f), g.r.IntN(3), g.r.IntN(1000))
		}
	}
	return call{"run_command", map[string]string{"command": cmd}, strings.TrimRight(b.String(), "\n")}
}

// failure is the output of a failing command whose error is errLine.
func (g *gen) failure(cmd, errLine string) string {
	if strings.HasPrefix(cmd, "go build") {
		return fmt.Sprintf("# github.com/acme/%s/%s\n%s\nexit status 1", g.d.name, g.d.pkg, errLine)
	}
	test := "Test" + title(g.d.item) + pick(g, "Import", "Roundtrip", "Shutdown", "Sync")
	return fmt.Sprintf("=== RUN   %s\n    %s_test.go:%d: %s\n--- FAIL: %s (0.%02ds)\nFAIL\nFAIL\tgithub.com/acme/%s/%s\t0.%03ds\nFAIL\nexit status 1",
		test, g.d.name, 20+g.r.IntN(200), errLine, test, g.r.IntN(100), g.d.name, g.d.pkg, g.r.IntN(1000))
}

// list is the output of list_files for a directory.
func (g *gen) list(dr string) string {
	var fs []string
	for _, f := range g.d.files {
		if dir(f) == dr {
			fs = append(fs, f, strings.TrimSuffix(f, ".go")+"_test.go")
		}
	}
	return strings.Join(fs, "\n")
}
