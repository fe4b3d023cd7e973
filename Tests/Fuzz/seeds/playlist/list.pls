[playlist]
NumberOfEntries=3
File1=a.mp3
Title1=First
Length1=120
File10=../b.ogg
file2 = http://example.invalid/live
Title2=Live
Version=2
