// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A C function with no relocations to resolve, so native_late.py's mprotect
 * mode can call it in a copy of this file it maps by hand (readable), then
 * makes executable with mprotect, as a loader of its own would.
 */
long burn(long n)
{
	volatile long acc = 0;
	long i;

	for (i = 0; i < n; i++)
		acc += i ^ (acc >> 3);
	return acc;
}
