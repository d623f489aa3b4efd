package textsearch

import "slices"

// lemmas maps irregular forms of common English verbs and nouns to the
// word a regular form would stem from: a Porter stemmer takes "meeting"
// and "meets" to "meet", but not "met"; "children" not to "child". A word
// found here is matched as its lemma on both sides, so "When did Evan meet
// his wife" finds "I met her in May". Ambiguous forms whose other sense is
// common ("left", "lives", "saw", "bit", "felt") are left out.
var lemmas = map[string]string{
	"met": "meet", "went": "go", "gone": "go", "took": "take", "taken": "take", "gave": "give", "given": "give",
	"ate": "eat", "eaten": "eat", "ran": "run", "began": "begin", "begun": "begin", "bought": "buy",
	"brought": "bring", "thought": "think", "taught": "teach", "caught": "catch", "found": "find",
	"made": "make", "said": "say", "told": "tell", "sold": "sell", "kept": "keep", "slept": "sleep",
	"lost": "lose", "paid": "pay", "built": "build", "sent": "send", "spent": "spend", "won": "win",
	"wrote": "write", "written": "write", "drove": "drive", "driven": "drive", "rode": "ride", "ridden": "ride",
	"flew": "fly", "flown": "fly", "grew": "grow", "grown": "grow", "knew": "know", "known": "know",
	"threw": "throw", "thrown": "throw", "drew": "draw", "drawn": "draw", "chose": "choose", "chosen": "choose",
	"spoke": "speak", "spoken": "speak", "broke": "break", "broken": "break", "forgot": "forget",
	"forgotten": "forget", "came": "come", "became": "become", "held": "hold", "stood": "stand",
	"understood": "understand", "heard": "hear", "fell": "fall", "fallen": "fall", "sang": "sing", "sung": "sing",
	"swam": "swim", "swum": "swim", "wore": "wear", "worn": "wear", "woke": "wake", "woken": "wake",
	"hung": "hang", "led": "lead", "fought": "fight", "sought": "seek", "lent": "lend", "meant": "mean",
	"sat": "sit", "shot": "shoot", "hid": "hide", "hidden": "hide", "struck": "strike", "stuck": "stick",
	"froze": "freeze", "frozen": "freeze", "stole": "steal", "stolen": "steal", "shook": "shake", "shaken": "shake",
	"rose": "rise", "risen": "rise", "dug": "dig", "fed": "feed", "fled": "flee", "bent": "bend",
	"children": "child", "men": "man", "women": "woman", "people": "person", "mice": "mouse", "feet": "foot",
	"teeth": "tooth", "geese": "goose", "wives": "wife", "knives": "knife", "wolves": "wolf", "halves": "half",
}

// formsOf maps a term (a stemmed lemma) to its irregular forms and the
// lemma itself: the words an index that stems on its own side is asked for
// besides the query's word.
var formsOf = func() map[string][]string {
	m := map[string][]string{}
	for form, lemma := range lemmas {
		t := Stem(lemma)
		if len(m[t]) == 0 {
			m[t] = append(m[t], lemma)
		}
		m[t] = append(m[t], form)
	}
	for _, forms := range m {
		slices.Sort(forms[1:])
	}
	return m
}()

// Lemma returns the lemma of w, a lowercase word: w itself unless it is
// an irregular form of the table.
func Lemma(w string) string {
	if l, ok := lemmas[w]; ok {
		return l
	}
	return w
}
