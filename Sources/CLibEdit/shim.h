#ifndef STORESH_CLIBEDIT_SHIM_H
#define STORESH_CLIBEDIT_SHIM_H
#include <stdio.h>
#include <histedit.h>
#include <editline/readline.h>
#endif
