//go:build bench

package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A needle is one fact said once, long ago, in the chat, and the question
// a user would ask about it later: in their own words, sharing at least
// one content word with the message but not copying it.
type needle struct{ fact, question string }

var needles = []needle{
	{"My locksmith is called Ferreira, his number is 0172 889 4410.", "What's the phone number of the locksmith?"},
	{"The wifi password at the cabin is lingonberry-2291.", "what was the wifi code for the cabin?"},
	{"Mum's birthday is on the 14th of August, don't let me forget.", "When is my mother's birthday?"},
	{"I parked the car on level 3 of the Rossio garage, spot 47.", "where did I leave the car in the garage?"},
	{"My passport expires in November 2027, remind me in the summer.", "when does my passport run out?"},
	{"The dentist, Dr. Okafor, moved my cleaning to Tuesday at 9:30.", "what time is my dentist appointment?"},
	{"Our landlord's email is r.almeida@casaprop.pt if the heating breaks again.", "how do I email the landlord?"},
	{"The alarm code for the office is 4-7-1-9, then the star key.", "what's the office alarm code?"},
	{"I'm allergic to penicillin, the doctor confirmed it in 2019.", "which antibiotic am I allergic to?"},
	{"The boiler service company is Termoval, ask for Jorge.", "who services the boiler?"},
	{"For the record, my blood type is O negative.", "what blood type do I have?"},
	{"The spare house key is under the blue flowerpot by the back door.", "where is the spare key hidden?"},
	{"Lena's flight lands at Gatwick at 18:45 on Friday, BA2471.", "what's Lena's flight number?"},
	{"The plumber charged 180 euros for the kitchen sink.", "how much did the plumber cost?"},
	{"My bike lock combination is 5823.", "what's the combination for the bike lock?"},
	{"Insurance policy number for the flat is HX-20-558193.", "what's the policy number of the flat insurance?"},
	{"The vet said Biscuit needs her rabies booster in March.", "when is Biscuit due for a booster?"},
	{"I lent my drill to Tomás from the third floor.", "who borrowed my drill?"},
	{"The lemon cake recipe uses 250 g of ground almonds and three eggs.", "how many almonds go into the lemon cake?"},
	{"Our anniversary dinner is booked at Taberna do Mar for 8pm on the 21st.", "which restaurant did we book for the anniversary?"},
	{"The gym membership renews automatically on the 3rd, 39 euros a month.", "how much is the gym per month?"},
	{"The router admin login is admin with the password Gato-Preto-77.", "what's the login for the router?"},
	{"Sofia's shoe size is 37 and she wants the green sneakers.", "what size shoes does Sofia wear?"},
	{"My tax advisor is Helena Brandt, she wants the receipts by April 10.", "by when does the tax advisor need the receipts?"},
	{"The tyre pressure should be 2.4 bar front and 2.2 rear.", "what pressure do the tyres need?"},
	{"The storage unit is number 112 at SafeBox in Alverca.", "what number is our storage unit?"},
	{"Grandpa's watch went to the repair shop on Rua Augusta, ticket 8841.", "where did I take grandpa's watch for repair?"},
	{"The school pickup on Wednesdays is at 15:20 at the side gate.", "what time is school pickup on Wednesday?"},
	{"My library card number is 2004 5561 7789.", "do you have my library card number?"},
	{"The electrician recommended replacing the fuse box, quote 640 euros.", "what did the electrician quote for the fuse box?"},
	{"I keep the warranty for the fridge in the green folder in the hall cupboard.", "where's the fridge warranty?"},
	{"Pedro's new phone number is 913 442 870.", "what's Pedro's number now?"},
	{"Our neighbours' cat is called Mostarda and it hates the hoover.", "what's the name of the neighbours' cat?"},
	{"The train to Porto leaves at 07:09 from Santa Apolónia, coach 4, seat 61.", "which seat do I have on the Porto train?"},
	{"My optician said my left eye is -2.25 and my right eye -1.75.", "what's the prescription for my left eye?"},
	{"The password for the kids' tablet is sunflower88.", "what's the tablet password?"},
	{"We paid the deposit of 1200 euros for the flat on 2 May.", "how big was the deposit for the flat?"},
	{"The hiking trail we liked was the Rota do Zêzere, a 14 km loop.", "what was that hiking trail we liked called?"},
	{"My bank's fraud line is 800 207 400.", "what number do I call for bank fraud?"},
	{"Anna prefers oat milk in her coffee.", "what kind of milk does Anna take?"},
	{"The contractor said the roof repair will start on 12 June.", "when does the roof work start?"},
	{"The babysitter, Marta, charges 10 euros an hour.", "how much does Marta charge?"},
	{"My employee number at work is E-55120.", "what's my employee number?"},
	{"The paint we used in the bedroom is Dulux Misty Harbour, matt.", "which paint colour is in the bedroom?"},
	{"Rui owes me 35 euros for the concert tickets.", "how much does Rui owe me?"},
	{"The car's next inspection is due in October.", "when is the car inspection?"},
	{"My niece Inês starts university in Coimbra this September.", "where is Inês going to university?"},
	{"I hid the Christmas presents on the top shelf of the garage.", "where did I put the Christmas presents?"},
	{"The water meter reading in January was 04821.", "what was the water meter reading?"},
	{"My cousin's wedding is in Évora on 6 September.", "where is my cousin's wedding?"},
}

// The filler's words: everyday talk with an assistant, including many of
// the needles' common words (car, key, number, password, flat, train), so
// that a question's plain words match thousands of messages and only its
// rare ones point at the needle.
var (
	fillSubjects = strings.Fields(`I we you my_sister my_brother the_kids my_boss the_neighbours Anna Pedro Sofia Rui
		Marta the_team my_friend the_landlord the_doctor mum dad the_teacher my_colleague the_client`)
	fillVerbs = strings.Fields(`need want forgot booked moved cancelled bought fixed checked called asked paid
		sent finished started planned cleaned lost found changed ordered tried visited missed watched read`)
	fillObjects = strings.Fields(`the_car the_train the_meeting the_report a_new_phone the_groceries the_flat the_key
		the_password the_bill the_number the_appointment the_tickets the_garden the_laundry the_email the_package
		the_kitchen the_invoice the_schedule the_dinner a_book the_presentation the_budget the_holiday the_code
		the_lunch the_bike the_coffee_machine the_printer the_insurance the_doctor's_note the_school_form
		the_pharmacy_order the_parking_permit the_bank_transfer the_birthday_cake the_office_plants the_shower`)
	fillTails = strings.Fields(`today tomorrow yesterday this_week next_week on_Monday on_Friday in_the_morning
		after_work before_lunch at_the_weekend last_night again for_the_second_time as_planned in_a_hurry
		later_than_usual with_some_help without_any_trouble at_last by_accident on_the_way_home`)
	fillOpeners = strings.Fields(`ok so right well hey hmm honestly anyway also by_the_way quick_question
		just_so_you_know good_morning thanks`)
	fillAnswers = []string{
		"Sure, I can help with that.", "Done, I added it to your list.", "Here is what I found.",
		"That sounds like a good plan.", "I set a reminder for you.", "Let me summarise the options.",
		"I checked and there is nothing new.", "Noted.", "You might want to check the time first.",
		"I would start with the most urgent one.", "Here are three ideas.", "It depends on the weather.",
	}
)

// filler writes one made-up message, its length and content drawn from r.
func filler(r *rand.Rand, assistant bool) string {
	var b strings.Builder
	if assistant {
		b.WriteString(fillAnswers[r.IntN(len(fillAnswers))])
	} else if r.IntN(3) == 0 {
		b.WriteString(capitalize(pick(r, fillOpeners)) + ",")
	}
	for n := 1 + r.IntN(3); n > 0; n-- {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		sentence := pick(r, fillSubjects) + " " + pick(r, fillVerbs) + " " + pick(r, fillObjects)
		if r.IntN(2) == 0 {
			sentence += " " + pick(r, fillTails)
		}
		if r.IntN(4) == 0 {
			sentence += " and " + pick(r, fillVerbs) + " " + pick(r, fillObjects)
		}
		if r.IntN(6) == 0 {
			sentence += fmt.Sprintf(" at %d:%02d", 7+r.IntN(14), 5*r.IntN(12))
		}
		b.WriteString(capitalize(sentence) + ".")
	}
	return b.String()
}

func pick(r *rand.Rand, words []string) string {
	return strings.ReplaceAll(words[r.IntN(len(words))], "_", " ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
