// Package dataset reads question sets into framing items: DialDefer's
// unified JSONL, the r/AIO experiment file, TruthfulQA's CSV (the
// 790-question and the original 817-question layouts), BBQ's original
// JSONL, and any CSV or JSONL given a column mapping. It also holds the
// built-in sample set, seeded stratified sampling, train/test splits keyed
// by item id, and the reader for DialDefer's released per-item results.
//
// Readers check everything before returning anything: a bad file yields
// every problem found (file, line, field, reason) and no items, so a caller
// never writes a run from half a file. A file over MaxDataFileBytes, a line
// or CSV record over MaxLineBytes and a record nested deeper than
// MaxNestingDepth are refused the same way, before they cost more memory.
package dataset
