package session

// RepairBatch is repairBatch, for the tests of the open that logs the
// events of unlogged entries.
const RepairBatch = repairBatch
