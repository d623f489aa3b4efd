// Package workload holds what the peer benchmark workers share: the message
// texts, the result JSON and its statistics.
package workload

import (
	"sort"
	"strconv"
)

// Words are the NATO words the message texts are made of.
var Words = [26]string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu"}

// TextLen is the length of every message text in bytes.
const TextLen = 500

// Role is "user" for even i and "assistant" for odd i.
func Role(i int) string {
	if i%2 == 0 {
		return "user"
	}
	return "assistant"
}

// Text returns message i: "<role> message <i>:" then " <word>" repeated,
// cut to exactly TextLen ASCII characters. Word k is Words[(state>>16)%26]
// where state starts at i+1 and before each word becomes
// (state*1664525 + 1013904223) mod 2^32.
func Text(i int) string {
	b := make([]byte, 0, TextLen+16)
	b = append(b, Role(i)...)
	b = append(b, " message "...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, ':')
	state := uint32(i + 1)
	for len(b) < TextLen {
		state = state*1664525 + 1013904223
		b = append(b, ' ')
		b = append(b, Words[(state>>16)%26]...)
	}
	return string(b[:TextLen])
}

// Stat is one measured figure over the repetitions: rep 0 is cold, the
// others give median, min and max.
type Stat struct {
	Cold   float64 `json:"cold"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize computes a Stat from the samples of reps 0..len-1.
func Summarize(samples []float64) Stat {
	if len(samples) == 0 {
		return Stat{}
	}
	s := Stat{Cold: round(samples[0])}
	warm := append([]float64(nil), samples[1:]...)
	if len(warm) == 0 {
		warm = []float64{samples[0]}
	}
	sort.Float64s(warm)
	s.N = len(warm)
	s.Min, s.Max = round(warm[0]), round(warm[len(warm)-1])
	if len(warm)%2 == 1 {
		s.Median = round(warm[len(warm)/2])
	} else {
		s.Median = round((warm[len(warm)/2-1] + warm[len(warm)/2]) / 2)
	}
	return s
}

func round(x float64) float64 {
	return float64(int64(x*1000+0.5)) / 1000
}

// Result is the JSON line a worker prints.
type Result struct {
	SDK            string  `json:"sdk"`
	N              int     `json:"N"`
	Reps           int     `json:"reps"`
	RSSAfterInitMB float64 `json:"rssAfterInitMB"`
	Build          struct {
		Ms        float64 `json:"ms"`
		FileBytes int64   `json:"fileBytes"`
	} `json:"build"`
	Compact struct {
		E2E                  Stat `json:"e2e_ms"`
		ModelHTTP            Stat `json:"model_http_ms"`
		ExclModel            Stat `json:"excl_model_ms"`
		Prepare              Stat `json:"prepare_ms"`
		RequestBytes         int  `json:"request_bytes"`
		ModelCalls           int  `json:"modelCalls"`
		ContextMessagesAfter int  `json:"contextMessagesAfter"`
	} `json:"compact"`
	Reopen struct {
		CompactedCtx    Stat `json:"compacted_ctx_ms"`
		UncompactedCtx  Stat `json:"uncompacted_ctx_ms"`
		ResumeToRequest Stat `json:"resume_to_request_ms"`
		ContextMessages int  `json:"contextMessages"`
		// StoreOnly is the Node worker's figure of the peer's store alone
		// (the Go worker leaves it out).
		StoreOnly *Stat `json:"store_only_compacted_ctx_ms,omitempty"`
	} `json:"reopen"`
	PeakRSSMB  float64 `json:"peakRssMB"`
	Summarized string  `json:"summarized,omitempty"`
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := append([]float64(nil), xs...)
	sort.Float64s(ys)
	if len(ys)%2 == 1 {
		return round(ys[len(ys)/2])
	}
	return round((ys[len(ys)/2-1] + ys[len(ys)/2]) / 2)
}
