package sim

// RunBodies hands the external tests the requests of testdata/requests.
var RunBodies = runBodies
