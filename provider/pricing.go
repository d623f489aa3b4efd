package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Cost is what one or more responses cost: Amount in Currency (an ISO
// 4217 code such as "USD", or another unit). The zero Cost means unknown
// or nothing: no price was known.
type Cost struct {
	Amount   float64
	Currency string
}

// Known reports whether c holds a price (it has a currency).
func (c Cost) Known() bool { return c.Currency != "" }

// MixedCurrency is the Currency of a sum of costs in more than one
// currency; its Amount is 0 (see [Cost.Add]).
const MixedCurrency = "mixed"

// Add returns c plus o. An unknown cost adds nothing; two costs in
// different currencies make a Cost of [MixedCurrency] with Amount 0 (a sum
// that would mean nothing), and so does adding to one.
func (c Cost) Add(o Cost) Cost {
	switch {
	case !o.Known():
		return c
	case !c.Known():
		return o
	case c.Currency != o.Currency || c.Currency == MixedCurrency:
		return Cost{Currency: MixedCurrency}
	}
	return Cost{Amount: c.Amount + o.Amount, Currency: c.Currency}
}

// Pricing prices provider responses: Price returns what one response of
// model that reported u cost, and false when it knows no price for model
// (the response is then recorded unpriced). Implementations must be safe
// for concurrent use. [PriceTable] is one; sessionkit builds in no prices
// (they change, and a wrong price is worse than none).
type Pricing interface {
	Price(model string, u Usage) (Cost, bool)
}

// ModelPrice is the price of one model in a [PriceTable]: per million
// tokens of each kind, in Currency ("" means "USD"). Input prices the
// input tokens that are neither read from nor written to the prompt cache
// (Usage.InputTokens minus both cache figures), CacheRead and CacheWrite
// the cache figures.
type ModelPrice struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	Currency   string  `json:"currency,omitzero"`
}

// PriceTable is a [Pricing] keyed by model name. A model is found by its
// exact name, or else by the longest name in the table followed by "-"
// that begins it, so that "gpt-4o" prices the "gpt-4o-2024-08-06" a
// provider reports as the model that answered.
type PriceTable map[string]ModelPrice

var _ Pricing = PriceTable(nil)

// Price implements [Pricing].
func (t PriceTable) Price(model string, u Usage) (Cost, bool) {
	p, ok := t.lookup(model)
	if !ok {
		return Cost{}, false
	}
	plain := max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
	amount := (float64(plain)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
	cur := p.Currency
	if cur == "" {
		cur = "USD"
	}
	return Cost{Amount: amount, Currency: cur}, true
}

// Has reports whether t prices model.
func (t PriceTable) Has(model string) bool {
	_, ok := t.lookup(model)
	return ok
}

func (t PriceTable) lookup(model string) (ModelPrice, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := "", false
	for name := range t {
		if len(name) > len(best) && strings.HasPrefix(model, name+"-") {
			best, found = name, true
		}
	}
	return t[best], found
}

// maxPrice bounds a price per million tokens: anything above is a mistake
// (a price per token written as per million, or a stray digit).
const maxPrice = 1e6

// Validate reports the first problem of t, naming the model and the
// field: an empty model name, or a price that is negative, not finite or
// above 1,000,000 per million tokens.
func (t PriceTable) Validate() error {
	names := make([]string, 0, len(t))
	for name := range t {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			return errors.New("a price has an empty model name")
		}
		p := t[name]
		for _, f := range []struct {
			field string
			v     float64
		}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
			if !(f.v >= 0) || f.v > maxPrice || math.IsInf(f.v, 0) {
				return fmt.Errorf("model %q: %s price %v is not a price (0 to %v per million tokens)", name, f.field, f.v, float64(maxPrice))
			}
		}
	}
	return nil
}

// ParsePriceTable reads a price table from JSON: an object whose members
// are model names, each an object with "input" and "output" (both
// required), "cache_read" and "cache_write" (the input price when left
// out: cached tokens cost what other input costs unless the table says
// otherwise) and "currency" ("USD" when left out); prices per million
// tokens. Unknown members, a missing required price and what
// [PriceTable.Validate] refuses are errors that name the model and the
// member.
//
//	{"gpt-4o": {"input": 2.5, "output": 10, "cache_read": 1.25}}
func ParsePriceTable(data []byte) (PriceTable, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	if raw == nil {
		return nil, errors.New("price table: not a JSON object of models")
	}
	t := make(PriceTable, len(raw))
	for name, body := range raw {
		var e struct {
			Input      *float64 `json:"input"`
			Output     *float64 `json:"output"`
			CacheRead  *float64 `json:"cache_read"`
			CacheWrite *float64 `json:"cache_write"`
			Currency   string   `json:"currency"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("price table: model %q: %w", name, err)
		}
		switch {
		case e.Input == nil:
			return nil, fmt.Errorf("price table: model %q has no \"input\" price", name)
		case e.Output == nil:
			return nil, fmt.Errorf("price table: model %q has no \"output\" price", name)
		}
		p := ModelPrice{Input: *e.Input, Output: *e.Output, CacheRead: *e.Input, CacheWrite: *e.Input, Currency: e.Currency}
		if e.CacheRead != nil {
			p.CacheRead = *e.CacheRead
		}
		if e.CacheWrite != nil {
			p.CacheWrite = *e.CacheWrite
		}
		t[name] = p
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	return t, nil
}
