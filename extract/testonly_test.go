package extract

// Helpers only the tests use, kept out of the production code.

// Strict turns a result that needed repairs into a failure that names them,
// keeping the list so a report can still say what would have read it.
func Strict(r Result) Result {
	if !r.OK() || len(r.Repairs) == 0 {
		return r
	}
	r.Object = nil
	r.Failure = FailStrict
	r.Problem = StrictProblem(r.Repairs)
	return r
}
