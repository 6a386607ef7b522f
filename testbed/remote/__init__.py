"""Operations on running guests over SSH: the site (a topology and its state folder), SSH
bound to it, the one wait primitive, and the records a site keeps (the profile in force,
repairs owed, each guest's boot record and serial console)."""
