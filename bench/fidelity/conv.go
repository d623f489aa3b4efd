package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
)

// The conversational part of the benchmark: long chats between two people,
// generated here (never a published corpus), with planted facts asked
// about in other words. Each fact is a pair of messages: the other
// speaker's question (in 15 of the 25 templates it shares the question's
// key words, as people ask) and the
// answer, which shares at most one content word with the question
// ([ContentWords]). Chatter around them mentions both names in about half
// of the messages and uses the questions' words in other senses.

// convFact is one template of a planted fact: {P} is the person asked
// about, {X} and {Y} slots filled from the lists of the template.
type convFact struct {
	question, prompt, answer string
	x, y                     []string
}

var (
	months  = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	cities  = []string{"Lisbon", "Osaka", "Denver", "Tallinn", "Cork", "Perth", "Quito", "Split", "Bergen", "Hanoi"}
	persons = []string{"Evan", "Maria", "Joanna", "Nate", "Caroline", "Gina", "Tim", "Audrey", "Sam", "Priya", "Omar", "Lena"}
)

var convFacts = []convFact{
	{"When did {P} meet their future wife?", "How did you and your wife meet?", "I met this amazing woman at a pottery class back in {X}.", months, nil},
	{"What pet does {P} have?", "Do you have a pet?", "Yes, a {X} named {Y}; he sleeps on my bed all day.", []string{"beagle", "tabby", "parrot", "tortoise", "ferret"}, []string{"Biscuit", "Pepper", "Milo", "Ziggy"}},
	{"Where did {P} go on vacation last summer?", "Where did you go on vacation?", "We flew to {X} and stayed by the sea for two weeks.", cities, nil},
	{"What instrument does {P} play?", "Do you play an instrument?", "I practice the {X} every evening; I joined a small band.", []string{"cello", "banjo", "trumpet", "harp", "oboe"}, nil},
	{"What is {P}'s job?", "What is your job these days?", "I work as a {X} at a clinic downtown.", []string{"nurse", "radiologist", "pharmacist", "dentist"}, nil},
	{"Which book did {P} recommend?", "Read anything good lately?", "You should pick up {X}, it changed how I think about cooking.", []string{"Salt Fat Acid Heat", "The Omnivore's Dilemma", "Kitchen Confidential"}, nil},
	{"What sport did {P} take up recently?", "Any new sport?", "I started {X} lessons twice a week a couple of months ago.", []string{"fencing", "climbing", "rowing", "judo", "squash"}, nil},
	{"How many children does {P} have?", "How is the family doing?", "The kids are great, all {X} of them keep me running.", []string{"two", "three", "four", "five"}, nil},
	{"When did {P} move to {Y}?", "How long have you lived there?", "We relocated in {X}, right after the wedding.", months, cities},
	{"What car did {P} buy?", "Did you buy a car?", "I bought a used {X}, red and rather fast.", []string{"Civic", "Golf", "Corolla", "Mazda3"}, nil},
	{"What did {P} cook for the party?", "What did you bring to the potluck?", "I made my grandmother's {X} and it disappeared in minutes.", []string{"lasagna", "paella", "goulash", "pierogi"}, nil},
	{"Where does {P}'s brother live?", "Where does your brother live now?", "My brother is in {X}, I visit him every spring.", cities, nil},
	{"What language is {P} learning?", "Any new hobbies?", "I have been studying {X} with an app every morning.", []string{"Korean", "Portuguese", "Finnish", "Swahili"}, nil},
	{"What did {P} paint?", "What are you painting in the art class?", "I finished a watercolor of the {X} at dusk.", []string{"harbour", "old mill", "cathedral", "lighthouse"}, nil},
	{"Why did {P} quit their last job?", "Why did you quit your job?", "The hours were brutal and my boss never listened; I walked out in {X}.", months, nil},
	{"What is {P} allergic to?", "Are you allergic to anything?", "No thanks, {X} makes my throat swell up.", []string{"peanuts", "shellfish", "sesame", "kiwi"}, nil},
	{"Which team does {P} support?", "Did you watch the game last night?", "Of course, the {X} finally won, I screamed the whole time.", []string{"Falcons", "Rovers", "Comets", "Pirates"}, nil},
	{"What did {P} win at the contest?", "What did you win at the contest?", "I took first prize, a {X}!", []string{"bicycle", "weekend in a spa", "telescope", "espresso machine"}, nil},
	{"What happened to {P} in {X}?", "How was your spring?", "In {X} I broke my ankle hiking and spent weeks on crutches.", months, nil},
	{"What does {P} drink in the morning?", "Coffee?", "Never coffee; a big mug of {X} tea keeps me going until noon.", []string{"mint", "ginger", "jasmine", "rooibos"}, nil},
	{"Who taught {P} to swim?", "Who taught you to swim?", "My uncle {X} threw me in the lake when I was six.", []string{"Walter", "Dmitri", "Henrik", "Bruno"}, nil},
	{"What did {P} lose on the train?", "You look upset, what happened?", "I left my {X} on the subway and nobody handed it in.", []string{"laptop", "violin", "passport", "wallet"}, nil},
	{"Where did {P} study?", "Where did you study?", "I graduated from {X} with a degree in chemistry.", []string{"McGill", "Leiden", "Uppsala", "Otago"}, nil},
	{"What gift did {P} give their mother?", "What gift did you give your mom?", "A {X}; she cried a little when she opened it.", []string{"locket", "quilt", "photo album", "rose bush"}, nil},
	{"When is {P}'s wedding anniversary?", "Any plans coming up?", "We celebrate ten years together in {X}, probably with a picnic.", months, nil},
}

// convChatter are the lines around the facts: {P} is the speaker's friend, {Q}
// the speaker. Many use the questions' words in other senses.
var convChatter = []string{
	"{P}, did you see the news this morning?", "Haha, that's so true {P}.", "Work has been crazy this week.",
	"We should meet up for coffee soon, {P}.", "My job is killing me lately, {P}.", "I need a vacation so badly.",
	"The kids next door are so loud.", "That party last weekend was fun, right {P}?", "I saw a great movie yesterday.",
	"{Q} here, just checking in!", "Did you try that new bakery on the corner?", "The weather is finally getting warmer.",
	"I can't believe it's already {M}.", "My sister called me about the holidays.", "{P}, remember the concert in {M}?",
	"I have been thinking about learning to play something.", "The train was late again today.", "What a week, {P}.",
	"Honestly I could sleep for a day.", "Let me know when you are free, {P}.", "That sounds amazing!",
	"I bought groceries and forgot the milk, of course.", "My car needs new tires.", "Good luck tomorrow, {P}!",
	"We watched the game at a bar downtown.", "I tried to cook something new and burned it.", "{P}, you always make me laugh.",
	"The book club picked something long this time.", "I miss the summer already.", "Are you still going to that contest?",
	"My mother says hi, {P}.", "School starts again next month for the kids.", "The team at work threw me a surprise lunch.",
	"I am so tired of the rain.", "How was your weekend, {P}?", "Same old, same old.", "Thanks for listening, {Q} appreciates it.",
}

// ConvQuestion is one question of the conversational part and the
// message that answers it.
type ConvQuestion struct {
	Question string
	Answer   int // index of the answering message in ConvScript.Msgs
}

// ConvScript is one generated conversation.
type ConvScript struct {
	Msgs      []history.Message
	Questions []ConvQuestion
}

// GenerateConv returns n conversations of about msgs messages each, with
// facts planted; the same seed gives the same conversations.
func GenerateConv(seed uint64, n, msgs, facts int) []ConvScript {
	out := make([]ConvScript, n)
	for c := range out {
		r := rand.New(rand.NewPCG(seed, uint64(1000+c)))
		a, b := persons[r.IntN(len(persons))], ""
		for b == "" || b == a {
			b = persons[r.IntN(len(persons))]
		}
		speakers := [2]string{a, b}
		planted := r.Perm(len(convFacts))[:min(facts, len(convFacts))]
		// where the facts go: distinct slots along the conversation
		at := map[int]int{} // message index of the prompt -> template
		for _, f := range planted {
			for {
				i := 2 + r.IntN(msgs-4)
				if _, ok := at[i]; !ok {
					if _, ok := at[i-1]; !ok {
						if _, ok := at[i+1]; !ok {
							at[i] = f
							break
						}
					}
				}
			}
		}
		var s ConvScript
		say := func(who int, text string) {
			role := history.RoleUser
			if who == 1 {
				role = history.RoleAssistant
			}
			s.Msgs = append(s.Msgs, history.Message{ID: fmt.Sprintf("c%d-m%d", c, len(s.Msgs)), Role: role, Text: text})
		}
		who := 0
		for len(s.Msgs) < msgs {
			if f, ok := at[len(s.Msgs)]; ok {
				t := convFacts[f]
				x, y := pickOne(r, t.x), pickOne(r, t.y)
				fill := func(s string) string {
					return strings.NewReplacer("{P}", speakers[1-who], "{X}", x, "{Y}", y).Replace(s)
				}
				// the other speaker asks, this one answers
				say(who, fill(t.prompt))
				ans := fill(t.answer)
				q := strings.NewReplacer("{P}", speakers[1-who], "{X}", x, "{Y}", y).Replace(t.question)
				say(1-who, ans)
				s.Questions = append(s.Questions, ConvQuestion{Question: q, Answer: len(s.Msgs) - 1})
				who = 1 - who
				continue
			}
			line := convChatter[r.IntN(len(convChatter))]
			line = strings.NewReplacer("{P}", speakers[1-who], "{Q}", speakers[who], "{M}", months[r.IntN(len(months))]).Replace(line)
			say(who, line)
			who = 1 - who
		}
		out[c] = s
	}
	return out
}

func pickOne(r *rand.Rand, l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[r.IntN(len(l))]
}

// ContentWords are the words of s a question and its answer must not
// share (more than one of): lowercased runs of letters and digits, less
// common function words, a plural or verb ending taken off.
func ContentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(w) < 3 || convStop[w] {
			continue
		}
		for _, suf := range []string{"ing", "ed", "es", "s"} {
			if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
				w = strings.TrimSuffix(w, suf)
				break
			}
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

var convStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("the and did does what when where which who why how their they them his her has have had was were are you your for with from that this its into about last") {
		m[w] = true
	}
	return m
}()

// ConvRecall counts, over the questions of the conversational part, how
// often the answer is the hit ranked first, among the first 5 and among
// the first 10 (At, a search without neighbours), and among those hits or
// their neighbours (WithNeighbors, a search with Neighbors: 1).
type ConvRecall struct {
	Questions         int
	At, WithNeighbors [3]int // k = 1, 5, 10
}

// convK are the k of ConvRecall.
var convK = [3]int{1, 5, 10}

// RunConv stores each conversation in a store (store "sqlite", a file in
// dir, or "memstore") and asks each question verbatim, with Neighbors 1.
func RunConv(ctx context.Context, convs []ConvScript, store, dir string) (ConvRecall, error) {
	var rec ConvRecall
	var st history.Store
	if store == "sqlite" {
		s, err := sqlite.Open(filepath.Join(dir, "conv.db"))
		if err != nil {
			return rec, err
		}
		defer s.Close()
		st = s
	} else {
		st = memstore.New()
	}
	for c, cs := range convs {
		id := fmt.Sprintf("conv-%d", c)
		snap, err := st.Create(ctx, history.NewSession{ID: id})
		if err != nil {
			return rec, err
		}
		if _, err := st.Append(ctx, id, snap.Version, cs.Msgs); err != nil {
			return rec, err
		}
		for _, q := range cs.Questions {
			want := cs.Msgs[q.Answer].ID
			rec.Questions++
			for _, n := range []int{0, 1} {
				p, err := st.Search(ctx, id, history.SearchQuery{Text: q.Question, Limit: convK[2], Neighbors: n})
				if err != nil {
					return rec, err
				}
				for k, top := range convK {
					found := slices.ContainsFunc(p.Hits[:min(top, len(p.Hits))], func(h history.SearchHit) bool {
						return h.MessageID == want || slices.ContainsFunc(h.Neighbors, func(m history.Message) bool { return m.ID == want })
					})
					switch {
					case found && n == 0:
						rec.At[k]++
					case found:
						rec.WithNeighbors[k]++
					}
				}
			}
		}
	}
	return rec, nil
}

// WriteConv writes the conversational part's table.
func WriteConv(w io.Writer, r ConvRecall) {
	fmt.Fprintf(w, "| %d paraphrased questions | recall@1 | recall@5 | recall@10 |\n|---|---|---|---|\n", r.Questions)
	line := func(name string, c [3]int) {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, ratio(c[0], r.Questions), ratio(c[1], r.Questions), ratio(c[2], r.Questions))
	}
	line("the hit itself", r.At)
	line("the hit or its neighbours (Neighbors: 1)", r.WithNeighbors)
}
