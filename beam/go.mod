module github.com/pwsd/pwsd/beam

go 1.26.8

require github.com/pwsd/pwsd v0.0.0

require github.com/apache/beam/sdks/v2 v2.77.0 // indirect

replace github.com/pwsd/pwsd => ../
