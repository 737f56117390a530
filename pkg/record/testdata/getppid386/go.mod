module getppid386

go 1.22
