module github.com/libsession/libsession/bindings/go

go 1.19
