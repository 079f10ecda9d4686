"""Qt item models over project data, fetched lazily so huge projects open instantly."""
