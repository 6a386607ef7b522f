"""Operations on running guests over SSH: the site (a topology and its state folder),
commands, health, each guest's boot record."""
