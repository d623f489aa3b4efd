package session

// RepairBatch is repairBatch, for the tests of the open that logs the
// events of unlogged entries.
const RepairBatch = repairBatch

// MaxDraft is maxDraft, for the tests of what a Replay keeps of a
// message being streamed.
const MaxDraft = maxDraft
