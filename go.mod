module github.com/chorus-dev/chorus

go 1.26.8
