"""Operations on running guests over SSH: commands, health, each guest's boot record."""
