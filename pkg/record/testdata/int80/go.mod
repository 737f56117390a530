module int80

go 1.22
